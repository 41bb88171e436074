from jsonschema import Draft202012Validator
from core.mcp.schemas import tool_schemas
for name, (given, _) in tool_schemas().items():
    for parameter, schema in given["properties"].items():
        bare = {k: v for k, v in schema.items() if k != "examples"}
        for ex in schema.get("examples", []):
            errs = list(Draft202012Validator(bare).iter_errors(ex))
            if errs: print(name, parameter, ex, errs[0].message[:300])
