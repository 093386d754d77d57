"""`skillbase config`: every setting's effective value and where it came from (variable, file, default)."""

from __future__ import annotations

import json

import click

from skillbase.commands.options import json_option


@click.command("config")
@json_option
def config(as_json: bool) -> None:
    """Show each setting's value and its source: a SKILLBASE_* variable, the configuration file
    ([tool.skillbase] in pyproject.toml, or skillbase.toml, found upward from here), or the default."""
    from skillbase.config import settings_document

    document = settings_document()
    if as_json:
        click.echo(json.dumps(document, indent=1))
        return
    looked = ", ".join(document["looked_for"])
    click.echo(f"configuration file: {document['file'] or f'none (looked for {looked} from here upward)'}")
    width = max(len(s["key"]) for s in document["settings"])
    for s in document["settings"]:
        value = s["value"] if s["value"] is not None else f"({s['where'].replace('`', '')})"
        source = {"environment": f"from ${s['where']}", "file": "from the file", "default": "default"}[s["source"]]
        click.echo(f"{s['key']:<{width}}  {value}  [{source}]")
