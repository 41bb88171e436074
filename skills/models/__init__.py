"""The skill graph: skills and their index, versions, agent assignments, proposals, conflicts,
usage records, learning profiles, trust and task assignments."""

from skills.models.catalog import (
    AgentSkill,
    Skill,
    SkillPosting,
    SkillScope,
    SkillTerm,
    SkillVersion,
)
from skills.models.learning import AgentTrust, LearningProfile, SkillUsage, TaskAssignment
from skills.models.reviews import SkillConflict, SkillProposal

__all__ = [
    "AgentSkill",
    "AgentTrust",
    "LearningProfile",
    "Skill",
    "SkillConflict",
    "SkillPosting",
    "SkillProposal",
    "SkillScope",
    "SkillTerm",
    "SkillUsage",
    "SkillVersion",
    "TaskAssignment",
]
