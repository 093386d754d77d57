"""Agents against a real OpenAI-compatible HTTP server on 127.0.0.1 with scripted answers."""

from __future__ import annotations

import pytest
from llm_server import ScriptedLLM, Step

from skillbase.agents.client import ChatClient, LLMUnavailable, load_config
from skillbase.agents.coder import NoCodeInReply, coder_prompt, debugger_prompt, extract_cuda
from skillbase.agents.prompts import load_prompt
from skillbase.errors import EnvironmentProblem, InputError

KERNEL = """__global__ void k(const float* a, float* b, int n) { int i = threadIdx.x; if (i < n) b[i] = a[i]; }
extern "C" void launch(const float* a, float* b, int n) { k<<<1, 256>>>(a, b, n); }
"""


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")


def _client(server, **overrides):
    config = load_config(model="scripted-model", base_url=server.base_url, timeout_s=overrides.get("timeout_s", 5),
                         max_retries=overrides.get("max_retries", 3))
    return ChatClient(config)


def test_reply_and_token_counts(key):
    with ScriptedLLM([Step(content="```cuda\n" + KERNEL + "```\nvectorised")]) as server:
        completion = _client(server).complete([{"role": "user", "content": "x" * 400}], sleep=lambda s: None)
    assert extract_cuda(completion.text, "launch") == KERNEL
    assert completion.prompt_tokens == 100 and completion.tries == 1
    assert server.requests[0]["model"] == "scripted-model"
    # The key travels only in the Authorization header, never in the body.
    assert "sk-test-secret-value" not in str(server.requests)
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-test-secret-value"


def test_server_errors_are_retried_with_backoff(key):
    sleeps = []
    with ScriptedLLM([Step(status=500), Step(status=503), Step(content="ok")]) as server:
        completion = _client(server).complete([{"role": "user", "content": "hi"}], sleep=sleeps.append)
    assert completion.text == "ok" and completion.tries == 3
    assert sleeps == [2.0, 4.0]


def test_endpoint_that_keeps_failing_raises_after_the_last_try(key):
    with ScriptedLLM([Step(status=500)] * 3) as server:
        with pytest.raises(LLMUnavailable, match=r"failed 3 times; last error: InternalServerError 500"):
            _client(server).complete([{"role": "user", "content": "hi"}], sleep=lambda s: None)
        assert len(server.requests) == 3


def test_timeout_is_retried_then_reported(key):
    with ScriptedLLM([Step(content="late", delay_s=1.5), Step(content="late", delay_s=1.5)]) as server:
        with pytest.raises(LLMUnavailable, match="APITimeoutError"):
            _client(server, timeout_s=0.3, max_retries=2).complete([{"role": "user", "content": "hi"}],
                                                                     sleep=lambda s: None)


def test_client_errors_are_not_retried(key):
    with ScriptedLLM([Step(status=404), Step(content="never asked")]) as server:
        with pytest.raises(LLMUnavailable, match="refused the request"):
            _client(server).complete([{"role": "user", "content": "hi"}], sleep=lambda s: None)
        assert len(server.requests) == 1


def test_malformed_body_is_a_failed_call_not_a_crash(key):
    with ScriptedLLM([Step(raw=b"{not json"), Step(raw=b"{not json"), Step(raw=b"{not json")]) as server:
        with pytest.raises(LLMUnavailable, match="malformed response"):
            _client(server).complete([{"role": "user", "content": "hi"}], sleep=lambda s: None)


def test_no_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EnvironmentProblem, match="OPENAI_API_KEY is not set"):
        ChatClient(load_config(model="m"))


def test_endpoint_name_never_holds_the_key_or_path():
    assert load_config(model="m", base_url="http://user:pw@10.0.0.1:8000/v1").endpoint_name == "10.0.0.1:8000"
    assert load_config(model="m", base_url=None).endpoint_name == "api.openai.com"
    assert load_config(model="m", base_url="http://127.0.0.1:8000/v1").endpoint_name == "127.0.0.1:8000"


@pytest.mark.parametrize("reply,message", [
    ("I would vectorise the loads.", "no fenced code block"),
    ("```cuda\nint x;\n```", "no __global__ kernel"),
    ("```cuda\n__global__ void k() {}\n```", "does not define the launcher launch()"),
])
def test_replies_without_usable_code(reply, message):
    with pytest.raises(NoCodeInReply, match=message):
        extract_cuda(reply, "launch")


def test_extract_prefers_the_block_with_the_launcher():
    reply = "```cuda\n__global__ void helper() {}\n```\nand\n```cuda\n" + KERNEL + "```"
    assert extract_cuda(reply, "launch") == KERNEL


def test_prompts_render_code_with_braces_untouched():
    prompt = coder_prompt(launcher="launch", skill_id="mem.vectorize", skill_title="Vectorize", skill_card="card",
                          evidence="dram_pct = 91 (>= 60)", memory="", example="", kernel_name="k", kernel=KERNEL)
    assert KERNEL in prompt.text and "mem.vectorize" in prompt.text and "{" in prompt.text
    assert prompt.template.name == "coder.v3"
    assert "(nothing yet)" in prompt.text
    # without the run's figures the standing says so (tests/run/test_standing.py renders real ones)
    assert "## Where the kernel stands" in prompt.text and "built without the task's sizes" in prompt.text
    debug = debugger_prompt(launcher="launch", skill_id="mem.vectorize", failure_kind="compile error",
                            error="k.cu:3: error: expected ';'", history="", kernel=KERNEL)
    assert "expected ';'" in debug.text and debug.template.role == "debugger"


def test_prompt_versions():
    assert load_prompt("coder").version >= 1
    with pytest.raises(InputError, match="does not exist"):
        load_prompt("coder", 999)
    with pytest.raises(InputError, match="no prompt template"):
        load_prompt("planner")
