"""Option decorators shared by several commands (sqlite-utils style): `--json`, `--store`,
`--extra-rules`, `--skills-dir`."""

from __future__ import annotations

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text.")
store_option = click.option(
    "--store", "store_path", type=click.Path(file_okay=False), default=None, envvar="SKILLBASE_STORE",
    help="Run store folder (default: $SKILLBASE_STORE, else ~/.local/share/skillbase).")


extra_rules_option = click.option(
    "--extra-rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True),
    help="Your own rules folder (derive/, propose/ with cases), added to the built-in rules; repeatable. "
         "Also $SKILLBASE_RULES_PATH. Rule ids must not collide with built-in ones.")

skills_dir_option = click.option(
    "--skills-dir", "skills_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Extra skill folder (<category>/<id>/skill.yaml inside); repeatable. Also $SKILLBASE_SKILL_PATH.")
