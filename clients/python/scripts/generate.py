"""Generate the client's derived sources: ``types.py`` from the OpenAPI schema (one TypedDict per
component the client returns or sends) and ``_async_resources.py`` from the sync resources.

    python scripts/generate.py SCHEMA.json|yaml   # from clients/python; then ruff format

tests/clients/test_schema_agreement.py regenerates both and fails when the committed files differ.
"""

from __future__ import annotations

import json
import keyword
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
PACKAGE = HERE / "src" / "engram_client"

# The components the client names (request bodies end in "Request"); everything they reference is
# generated too.
ROOTS = [
    "MeOutput",
    "AgentOutput",
    "ConversationOutput",
    "ConversationDetailOutput",
    "MessageOutput",
    "MessageListOutput",
    "SummaryOutput",
    "ExtractionRunOutput",
    "ExtractionOutput",
    "ContextOutput",
    "MemorySearchOutput",
    "RoutedOutput",
    "MemoryStatsOutput",
    "EntryOutput",
    "WorkingSessionOutput",
    "WorkingSessionClearOutput",
    "WorkingExistsOutput",
    "ShortTermOutput",
    "ShortTermBatchOutput",
    "PoolOutput",
    "PoolStatsOutput",
    "DataValueOutput",
    "DataWriteOutput",
    "MemoryContextOutput",
    "MemoryEntryOutput",
    "MemoryEntryBatchOutput",
    "LongTermSearchOutput",
    "KnowledgeStoreOutput",
    "KnowledgeItemOutput",
    "KnowledgeQueryOutput",
    "KnowledgeRelationshipOutput",
    "KnowledgeItemRelationshipsOutput",
    "KnowledgeBaseOutput",
    "DocumentOutput",
    "SearchOutput",
    "QueryOutput",
    "PageOutput",
    "PageSummaryOutput",
    "PageHitsOutput",
    "BacklinkOutput",
    "RelatedOutput",
    "BrokenLinksOutput",
    "MentionsOutput",
    "RenameOutput",
    "LinkReportOutput",
    "SkillOutput",
    "SkillDetailOutput",
    "SkillUpdateOutput",
    "SkillDiscoverOutput",
    "SkillContextOutput",
    "UsageRecordOutput",
    "GraphNodeOutput",
    "NodeDetailOutput",
    "NodeSearchOutput",
    "GraphEdgeOutput",
    "NeighboursOutput",
    "PathOutput",
    "GraphContextOutput",
    "MessageInputRequest",
    "ErrorBody",
]


def _name(component: str) -> str:
    name = component.replace(".", "")
    for suffix, replacement in (("InputRequest", "Input"), ("Request", "Input"), ("Output", "")):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)] + replacement
    return name


class _Generator:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.components: dict[str, Any] = schema["components"]["schemas"]
        self.wanted: list[str] = []

    def _want(self, component: str) -> str:
        if component not in self.wanted:
            self.wanted.append(component)
        return _name(component)

    def annotation(self, prop: dict[str, Any]) -> str:
        nullable = bool(prop.get("nullable"))
        text = self._bare(prop)
        if nullable and text != "Any" and not text.endswith("| None"):
            text += " | None"
        return text

    def _bare(self, prop: dict[str, Any]) -> str:
        if "$ref" in prop:
            component = prop["$ref"].rsplit("/", 1)[-1]
            target = self.components[component]
            if "enum" in target:
                values = [v for v in target["enum"] if v is not None]
                return "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"
            if target.get("type", "object") == "object" and "properties" in target:
                return self._want(component)
            return self.annotation(target)
        for combinator in ("allOf", "oneOf", "anyOf"):
            if combinator in prop:
                options = [self._bare(option) for option in prop[combinator]]
                unique = list(dict.fromkeys(o for o in options if o != 'Literal[""]'))
                if len(unique) == 1:
                    return unique[0]
                if all(o.startswith("Literal[") for o in unique):
                    return "Literal[" + ", ".join(o[8:-1] for o in unique) + "]"
                return "Any"
        kind = prop.get("type")
        if "enum" in prop:
            values = [v for v in prop["enum"] if v is not None]
            return "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "array":
            return f"list[{self._bare(prop.get('items', {}))}]"
        if kind == "object":
            if "properties" in prop:
                return "dict[str, Any]"
            extra = prop.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return f"dict[str, {self.annotation(extra)}]"
            return "dict[str, Any]"
        return "Any"

    def typed_dict(self, component: str) -> str:
        spec = self.components[component]
        name = _name(component)
        required = set(spec.get("required", []))
        props: dict[str, Any] = spec.get("properties", {})
        must = [(k, v) for k, v in props.items() if k in required]
        may = [(k, v) for k, v in props.items() if k not in required]
        if any(keyword.iskeyword(k) or not k.isidentifier() for k in props):
            fields = ", ".join(f"{k!r}: {self.annotation(v)}" for k, v in props.items())
            return f'{name} = TypedDict("{name}", {{{fields}}}, total=False)\n'
        doc = f'    """``{component}`` in the OpenAPI schema."""\n'
        if not may:
            body = "".join(f"    {k}: {self.annotation(v)}\n" for k, v in must)
            return f"class {name}(TypedDict):\n{doc}{body}"
        if not must:
            body = "".join(f"    {k}: {self.annotation(v)}\n" for k, v in may)
            return f"class {name}(TypedDict, total=False):\n{doc}{body}"
        base = "".join(f"    {k}: {self.annotation(v)}\n" for k, v in must)
        body = "".join(f"    {k}: {self.annotation(v)}\n" for k, v in may)
        return (
            f"class _{name}Required(TypedDict):\n{base}\n\n"
            f"class {name}(_{name}Required, total=False):\n{doc}{body}"
        )


def types_source(schema: dict[str, Any]) -> str:
    generator = _Generator(schema)
    for root in ROOTS:
        generator._want(root)
    blocks: list[str] = []
    done = 0
    while done < len(generator.wanted):  # references found while rendering join the queue
        blocks.append(generator.typed_dict(generator.wanted[done]))
        done += 1
    header = (
        '"""The API\'s objects as TypedDicts, generated from the OpenAPI schema by\n'
        "scripts/generate.py: do not edit by hand. Fields the schema marks required are\n"
        'required keys; the others may be absent."""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Any, Literal, TypedDict\n\n"
        "__all__ = [\n" + "".join(f'    "{_name(c)}",\n' for c in sorted(generator.wanted)) + "]\n"
    )
    return header + "\n\n" + "\n\n".join(blocks)


def async_source(sync: str) -> str:
    """The async resources from the sync ones: every method is a coroutine, pages are async."""
    text = sync.replace(
        '"""The resources of the sync client',
        '"""Generated from _resources.py by scripts/generate.py: do not edit by hand.\n\n'
        "The resources of the async client",
        1,
    )
    text = re.sub(r"^class (\w+)\(Resource\)", r"class Async\1(AsyncResource)", text, flags=re.M)
    text = re.sub(r"^(    )def (?!__init__)", r"\1async def ", text, flags=re.M)
    text = re.sub(r"(\s)(\w+)\(client\)", r"\1Async\2(client)", text)
    text = re.sub(r"return self\.(\w+)\(", r"return await self.\1(", text)
    text = text.replace("SyncPage[", "AsyncPage[").replace(
        "client: Requester", "client: AsyncRequester"
    )
    text = text.replace(
        "from ._base import Requester, Resource, SyncPage, endpoint",
        "from ._base import AsyncPage, AsyncRequester, AsyncResource, endpoint",
    )
    return text


def tidy(text: str, path: Path) -> str:
    """``text`` as the project's ruff would leave it at ``path`` (imports sorted, formatted)."""
    for command in (["check", "--fix-only", "--exit-zero"], ["format"]):
        text = subprocess.run(
            ["ruff", *command, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return text


def main(argv: list[str]) -> None:
    path = Path(argv[1])
    if path.suffix in (".yaml", ".yml"):
        import yaml

        schema = yaml.safe_load(path.read_text())
    else:
        schema = json.loads(path.read_text())
    (PACKAGE / "types.py").write_text(tidy(types_source(schema), PACKAGE / "types.py"))
    target = PACKAGE / "_async_resources.py"
    target.write_text(tidy(async_source((PACKAGE / "_resources.py").read_text()), target))


if __name__ == "__main__":
    main(sys.argv)
