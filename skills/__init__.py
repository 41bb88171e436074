"""skills: skills, versions, agent-skill links, proposals, conflicts, usage and learning profiles
(docs/skills.md). Its layers are the usual modules and packages (``models/``, ``services/``,
``selectors/``, ``apis/``, ``urls``, ``admin``, ``admin_review``, ``admin_versions``, ``tasks``,
``mcp``, ``spaces``, ``roles``).

Its algorithm modules:

- ``categories``: the skill categories and how a text is classified into one;
- ``learning``: learning profiles' arithmetic (what usage teaches about an agent);
- ``similarity``: how alike two skills' texts are (conflict detection);
- ``semver``: version numbers, parsed and compared."""
