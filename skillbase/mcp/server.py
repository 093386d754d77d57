"""The MCP server: the Python API (`skillbase.api`) as Model Context Protocol tools and resources.

Built on the official `mcp` SDK's low-level server (the `mcp` extra): every tool declares a JSON
Schema for its input (no other arguments accepted), answers with a structured result (the API
result's own `to_json()` document, also as JSON text), and reports progress on long calls. A bad
call (an unknown or missing argument, a path outside the server's folder, a candidate for a run
that is not waiting) is a tool error of one sentence; the server keeps serving.

    serve(ServerConfig(root=Path.cwd()), transport="stdio")

Import it after `skillbase.mcp.require_extra()`: the `mcp` SDK is an optional extra.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import jsonschema
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from skillbase import __version__, api
from skillbase.config import store_location
from skillbase.errors import InputError, SkillbaseError
from skillbase.run.types import Settings

log = logging.getLogger("skillbase.mcp")

INSTRUCTIONS = """\
skillbase maps a CUDA kernel's profile to expert optimization skills with an auditable rule engine, and
judges new kernels in a cheat-resistant harness. Typical session: `advise` on a saved Nsight Compute
report (or `profile` on a GPU machine) -> `optimize_start` an external run -> read the prompt it
returns, write the new kernel -> `submit_candidate` -> read the verdict and the next prompt. Paths are
relative to the server's folder (`--root`, default: the folder it was started in)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ServerConfig:
    """Where the server may read and write: its root folder, folders allowed besides it, its run store."""

    root: Path
    allowed: tuple[Path, ...] = ()
    store: Path | None = None

    @property
    def store_folder(self) -> Path:
        return store_location(self.store).resolve()

    def path(self, value: str, *, exists: bool = True) -> Path:
        """`value` resolved against the root folder; refused outside it, the allowed folders and the store."""
        path = Path(value).expanduser()
        path = (path if path.is_absolute() else self.root / path).resolve()
        folders = (self.root, *self.allowed, self.store_folder)
        if not any(path.is_relative_to(folder) for folder in folders):
            raise InputError(f"{value} is outside the server's folder {self.root}",
                             "start the server with `--allow-path DIR` (or `--root DIR`) to allow another folder")
        if exists and not path.exists():
            raise InputError(f"{value}: no such file", "paths are relative to the server's folder (--root)")
        return path

    def optional_path(self, args: dict[str, Any], name: str, *, exists: bool = True) -> Path | None:
        return self.path(args[name], exists=exists) if args.get(name) is not None else None


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its input schema, whether it only reads, and the call behind it (which reports progress
    through the callback it is given when its work is long)."""

    name: str
    description: str
    properties: dict[str, Any]
    call: Callable[[ServerConfig, dict[str, Any], Progress], dict[str, Any]]
    required: tuple[str, ...] = ()
    read_only: bool = True

    @property
    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}

    def tool(self) -> types.Tool:
        return types.Tool(name=self.name, description=self.description, input_schema=self.input_schema,
                          annotations=types.ToolAnnotations(read_only_hint=self.read_only,
                                                            idempotent_hint=self.read_only))


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _int(description: str, minimum: int = 0, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum, "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def _bool(description: str) -> dict[str, Any]:
    return {"type": "boolean", "default": False, "description": description}


KERNEL_INPUTS = {
    "report": _str("A saved Nsight Compute report (.ncu-rep, or a raw-page CSV)."),
    "evidence": _str("An evidence JSON document (from the `evidence` tool or `skillbase evidence`)."),
    "source": _str("The kernel source (.cu): static features; alone, it is profiled first (GPU machines)."),
    "kernel": _str("Focus on this kernel of the report: a substring or regex of its name."),
}
RUN = _str("The run, e.g. run_3 (from optimize_start or pending).")


# -- the tools' calls (each one API call and its own document) --------------------------------------

def _advise(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    advice = api.advise(config.optional_path(args, "report"), config.optional_path(args, "evidence"),
                        config.optional_path(args, "source"), args.get("kernel"))
    return api.advice_json(advice, top=args.get("top", 5), why_not_skill=args.get("why_not"))


def _evidence(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    made = api.make_evidence(config.optional_path(args, "report"), config.optional_path(args, "source"),
                             kernel=args.get("kernel"))
    return json.loads(made.to_json())


def _skills_search(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    progress("searching the skill corpus (the first search builds the index)")
    return api.skills_search(args["query"], args.get("k", 5)).to_json()


def _skills_show(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return api.skills_show(args["skill"]).to_json()


def _rules_explain(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return api.rules_explain(args["rule"], report=config.optional_path(args, "report"),
                             evidence=config.optional_path(args, "evidence"),
                             source=config.optional_path(args, "source"), kernel=args.get("kernel")).to_json()


def _check(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    result = api.check(config.path(args["kernel"]), config.optional_path(args, "candidate"),
                       preset=args.get("preset"), time=not args.get("no_time", False), progress=progress)
    return result.to_json()


def _profile(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    out = config.path(args.get("out", "."), exists=False)
    return api.profile(config.path(args["kernel"]), preset=args.get("preset"), full=args.get("full", False), out=out,
                       progress=progress).to_json()


def _optimize_start(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    run = api.Run.start(config.path(args["kernel"]), agent="external", rounds=args.get("rounds", 10),
                        repairs=args.get("repairs", 3), gpu=not args.get("no_gpu", False), preset=args.get("preset"),
                        saved_report=config.optional_path(args, "saved_report"),
                        stop_at_floor=args.get("stop_at_floor", Settings.stop_at_floor), store=config.store,
                        progress=progress)
    return run.to_json()


def _pending(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return {"pending": [api.prompt_json(p) for p in api.pending(config.store, args.get("batch"))]}


def _submit_candidate(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    given = [name for name in ("candidate_path", "candidate_source") if args.get(name) is not None]
    if len(given) != 1:
        raise InputError("give the candidate once: candidate_path (a file) or candidate_source (its text)",
                         "the candidate is the full source of the new kernel")
    source = (config.path(args["candidate_path"]).read_text(errors="replace") if given[0] == "candidate_path"
              else args["candidate_source"])
    return api.Run(args["run"], config.store).submit(source, progress=progress).to_json()


def _stop_run(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return api.Run(args["run"], config.store).stop(args["reason"])


def _explain(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return api.Run(args["run"], config.store).explain(round_idx=args.get("round"),
                                                      fails_only=args.get("fails_only", False))


def _report(config: ServerConfig, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    out = config.path(args.get("out", "."), exists=False)
    return api.Run(args["run"], config.store).report(out, force=args.get("force", False)).to_json()


TOOLS = {spec.name: spec for spec in (
    ToolSpec("advise", "Rank expert optimization skills for a kernel from its evidence: give a saved report "
             "(with its source for static features), an evidence document, or a source alone (profiled on a GPU). "
             "Each candidate carries the rules that fired and the observed values behind them; `why_not` explains "
             "why one skill was not proposed.",
             {**KERNEL_INPUTS, "why_not": _str("A skill id: the rules that could propose it and their failed "
                                               "predicates."),
              "top": _int("How many candidates to return.", minimum=1, default=5)}, _advise),
    ToolSpec("evidence", "Convert a profile (and/or a kernel source) into skillbase's evidence document: metrics, "
             "static features of the source, ptxas resources, the roofline.",
             {key: KERNEL_INPUTS[key] for key in ("report", "source", "kernel")}, _evidence),
    ToolSpec("skills_search", "Find skills by meaning (sentence embeddings plus exact words).",
             {"query": _str("What the kernel suffers from or what you want to do, in words."),
              "k": _int("How many skills.", minimum=1, default=5)}, _skills_search, required=("query",)),
    ToolSpec("skills_show", "One skill card under its fixed headings (what it does, when it applies, how, pitfalls, "
             "how to verify), and the rules that propose it.", {"skill": _str("A skill id, e.g. mem.vectorize.")},
             _skills_show, required=("skill",)),
    ToolSpec("rules_explain", "One rule as written (its condition tree, what it proposes or derives, the names it "
             "reads and what they mean); with a report, evidence or source, also how it decided on that kernel.",
             {"rule": _str("A rule id, e.g. mem.smem_tiling.cache-reuse."), **KERNEL_INPUTS}, _rules_explain,
             required=("rule",)),
    ToolSpec("check", "Build, statically check, verify and time a kernel (its .task.yaml beside it); with "
             "`candidate`, verify the candidate against the kernel and time them interleaved. Needs a GPU.",
             {"kernel": _str("The task's kernel K.cu (K.task.yaml beside it)."),
              "candidate": _str("A new version of the kernel to check against `kernel`."),
              "preset": _str("Time only this size preset."), "no_time": _bool("Verify only.")},
             _check, required=("kernel",)),
    ToolSpec("profile", "Profile a kernel once with Nsight Compute (the rules' metrics), write the report and its "
             "evidence, and rank the skills for it. Needs a GPU and ncu.",
             {"kernel": _str("The task's kernel K.cu (K.task.yaml beside it)."),
              "preset": _str("The size preset to profile."), "full": _bool("Collect ncu's full set (slower)."),
              "out": _str("Folder for the report and the evidence (default: the server's folder).")},
             _profile, required=("kernel",), read_only=False),
    ToolSpec("optimize_start", "Start an optimization run in external mode: skillbase profiles, decides the skill "
             "and writes the prompt; you write the kernel and answer with submit_candidate. Returns the run and "
             "the prompt it waits on (with its text).",
             {"kernel": _str("The task's kernel K.cu (K.task.yaml beside it)."),
              "rounds": _int("Rounds of optimization.", minimum=1, default=10),
              "repairs": _int("Debugger repairs per attempt.", minimum=0, default=3),
              "no_gpu": _bool("A compile-only run (no verification or timing; nothing is accepted)."),
              "saved_report": _str("A saved .ncu-rep of the kernel as it is now: the first round's evidence."),
              "preset": _str("The size preset to profile and time."),
              # the share is checked by Settings.check (one place for the CLI, the API and this tool)
              "stop_at_floor": {"type": "number", "default": Settings.stop_at_floor,
                                "description": "A share between 0 and 1 (0: never): once the engine has no "
                                "proposal left, stop when the best kernel runs at this share of its roofline floor "
                                "or more, instead of asking for your own choice."}},
             _optimize_start, required=("kernel",), read_only=False),
    ToolSpec("pending", "Every run waiting for a candidate: its prompt (path and text), whether it is a first try "
             "(coder) or a repair (debugger), the round and the skill.",
             {"batch": _str("Only the runs of this batch (batch_N).")}, _pending),
    ToolSpec("submit_candidate", "Judge a new kernel as the answer to a waiting run's prompt: build, static check, "
             "verify and time it (compile only in a run started with no_gpu), record the verdict, and continue the "
             "run to its next prompt. Returns the verdict and the next prompt.",
             {"run": RUN, "candidate_path": _str("A file holding the new kernel's full source."),
              "candidate_source": _str("The new kernel's full source as text.")},
             _submit_candidate, required=("run",), read_only=False),
    ToolSpec("stop_run", "End a waiting (paused) or interrupted run by hand, with a reason: it is finished, keeps "
             "its rounds and best kernel, and no longer waits for a candidate. Returns the run's summary.",
             {"run": RUN, "reason": _str("Why the run is stopped (its stop reason).")}, _stop_run,
             required=("run", "reason"), read_only=False),
    ToolSpec("explain", "Replay a run's decisions from the store: per round the evidence, the ranked candidates "
             "with their reasons, each attempt's verdict.",
             {"run": RUN, "round": _int("Only this round."),
              "fails_only": _bool("Only failed attempts, and the rules that did not fire.")}, _explain,
             required=("run",)),
    ToolSpec("report", "Write a run's Markdown and HTML report (speedup per round, roofline, every outcome).",
             {"run": RUN, "out": _str("Folder for RUN.md and RUN.html (default: the server's folder)."),
              "force": _bool("Overwrite existing report files.")}, _report, required=("run",), read_only=False),
)}


def validate_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with the schema's defaults, or an InputError of one sentence."""
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        raise InputError(f"unknown argument {', '.join(f'`{name}`' for name in unknown)} for tool {spec.name}",
                         f"it takes {', '.join(spec.properties) or 'no arguments'}")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(spec.input_schema).iter_errors(arguments))
    if error is not None:
        where = f"argument `{error.path[0]}`" if error.path else f"tool {spec.name}"
        raise InputError(f"{where}: {error.message}", f"the input schema of {spec.name} lists its arguments")
    return {**{k: v["default"] for k, v in spec.properties.items() if "default" in v}, **arguments}


# -- resources: skill cards and run records ------------------------------------------------------

SKILL_URI, RUN_URI = "skillbase://skills/", "skillbase://runs/"


def list_resources(config: ServerConfig) -> list[types.Resource]:
    from skillbase.run.store import RunStore

    found = [types.Resource(name=skill.id, title=skill.title, uri=SKILL_URI + skill.id, mime_type="text/markdown",
                            description=skill.summary) for skill in api.skills_list()]
    store = RunStore.open(config.store, read_only=True)   # listing resources writes nothing
    try:
        runs = store.list_runs(limit=100)
    finally:
        store.close()
    found += [types.Resource(name=run.name, title=f"{run.name}: {run.task_name} ({run.status})", uri=RUN_URI + run.name,
                             mime_type="application/json", description="The run's record: every decision and attempt.")
              for run in runs]
    return found


def read_resource(config: ServerConfig, uri: str) -> tuple[str, str]:
    """(text, MIME type) of a skill card or a run record."""
    if uri.startswith(SKILL_URI):
        return api.skills_show(uri[len(SKILL_URI):]).text(), "text/markdown"
    if uri.startswith(RUN_URI):
        record = api.Run(uri[len(RUN_URI):], config.store).explain()
        return json.dumps(record, indent=1, default=str), "application/json"
    raise InputError(f"unknown resource {uri}", f"resources are {SKILL_URI}<skill id> and {RUN_URI}<run>")


# -- the server ----------------------------------------------------------------------------------

def tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(config: ServerConfig) -> Server:
    """The low-level MCP server: list and call tools, list and read resources."""

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.tool() for spec in TOOLS.values()])

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return tool_error(f"unknown tool {params.name}; the tools are {', '.join(TOOLS)}")
        steps = 0

        def progress(message: str) -> None:
            # Called from the worker thread: hand the notification to the event loop (a no-op unless
            # the client asked for progress).
            nonlocal steps
            steps += 1
            anyio.from_thread.run(ctx.session.report_progress, steps, None, message)

        try:
            arguments = validate_arguments(spec, dict(params.arguments or {}))
            document = await anyio.to_thread.run_sync(lambda: spec.call(config, arguments, progress))
        except SkillbaseError as error:
            return tool_error(str(error))
        except Exception as error:   # a bug must not take the server down: say so, keep serving
            log.exception("tool %s failed", spec.name)
            return tool_error(f"internal error in {spec.name}: {type(error).__name__}: {error}")
        text = json.dumps(document, indent=1, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=json.loads(text))

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(lambda: list_resources(config)))

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(name="skill", uri_template=SKILL_URI + "{skill_id}", mime_type="text/markdown",
                                   description="A skill card under its fixed headings."),
            types.ResourceTemplate(name="run", uri_template=RUN_URI + "{run}", mime_type="application/json",
                                   description="A run's record from the store (what `explain` returns).")])

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text, mime = await anyio.to_thread.run_sync(lambda: read_resource(config, uri))
        except SkillbaseError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    return Server("skillbase", version=__version__, instructions=INSTRUCTIONS, on_list_tools=on_list_tools,
                  on_call_tool=on_call_tool, on_list_resources=on_list_resources,
                  on_list_resource_templates=on_list_resource_templates, on_read_resource=on_read_resource)


def serve(config: ServerConfig, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (streamable HTTP at /mcp)."""
    server = build_server(config)
    if transport == "stdio":
        async def run_stdio() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run_stdio)
        return
    import uvicorn

    print(f"skillbase mcp: streamable HTTP on http://{host}:{port}/mcp (root {config.root})", file=sys.stderr)
    app = server.streamable_http_app(host=host)
    anyio.run(uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve)
