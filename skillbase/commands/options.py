"""Option decorators shared by several commands (sqlite-utils style): `--json`, `--store`."""

from __future__ import annotations

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text.")
store_option = click.option(
    "--store", "store_path", type=click.Path(file_okay=False), default=None, envvar="SKILLBASE_STORE",
    help="Run store folder (default: $SKILLBASE_STORE, else $XDG_DATA_HOME/skillbase or ~/.local/share/skillbase).")


def _add_rules_path(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    # The engine reads user rule folders from $SKILLBASE_RULES_PATH wherever it loads rules, so the
    # option extends that list while this command runs, and puts it back when the command ends (a
    # process may run several commands: tests, scripts calling skillbase.cli.main).
    if value:
        import os

        from skillbase.engine.evaluate import RULES_PATH_ENV
        from skillbase.config import env_paths

        previous = os.environ.get(RULES_PATH_ENV)
        current = env_paths(RULES_PATH_ENV)
        os.environ[RULES_PATH_ENV] = os.pathsep.join([*current, *(os.path.abspath(v) for v in value)])

        def restore() -> None:
            if previous is None:
                os.environ.pop(RULES_PATH_ENV, None)
            else:
                os.environ[RULES_PATH_ENV] = previous

        ctx.call_on_close(restore)


extra_rules_option = click.option(
    "--extra-rules", multiple=True, type=click.Path(file_okay=False, exists=True), expose_value=False,
    callback=_add_rules_path, is_eager=True,
    help="Your own rules folder (derive/, propose/ with cases), added to the built-in rules; repeatable. "
         "Also $SKILLBASE_RULES_PATH. Rule ids must not collide with built-in ones.")
