"""A conversation's context as its agent would get it, for the people who manage memory in
its account (the admin's "Preview context", docs/admin.md): what an agent sees before its next
LLM call, to check why it answered as it did. Assembling reads only; nothing is written."""

from __future__ import annotations

from dataclasses import replace

from core.actors import Actor, actor_for_agent
from memory.context.assembly.assemble import ContextRequest, ContextResult, context_assemble
from memory.models import Conversation
from memory.roles import MANAGE_MEMORY


def context_preview(
    *, actor: Actor, conversation: Conversation, request: ContextRequest
) -> ContextResult:
    """``request`` assembled for ``conversation`` as its agent: the agent's own access rules
    decide what the context may hold (its memories, the pools it may read), as they do when
    the agent asks. ``actor`` needs a memory-managing role in the conversation's account."""
    actor.require(conversation.account_id, MANAGE_MEMORY)
    return context_assemble(
        actor=actor_for_agent(conversation.agent),
        request=replace(request, conversation_id=conversation.pk),
    )
