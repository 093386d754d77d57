"""A thin chat client over the `openai` package, for any OpenAI-compatible endpoint.

Configuration comes from explicit arguments, else the environment: `OPENAI_API_KEY` and
`OPENAI_BASE_URL` (the OpenAI client's own convention, read here) and `SKILLBASE_MODEL`,
`SKILLBASE_LLM_TIMEOUT`, `SKILLBASE_LLM_RETRIES` (read through `skillbase.config`). The key is read
when the client is built and is never returned, logged or stored in a run (only the endpoint's host
name and the model are). Transient failures
(connection errors, timeouts, 429 and 5xx) are retried with exponential backoff; after the last
try the call raises `LLMUnavailable`, which the loop records as a failed attempt and goes on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from skillbase.config import env
from skillbase.errors import EnvironmentProblem, SkillbaseError

DEFAULT_MODEL = "gpt-4.1"


class LLMUnavailable(SkillbaseError):
    """The endpoint failed or timed out on every try."""


@dataclass(frozen=True)
class LLMConfig:
    model: str
    base_url: str | None
    timeout_s: float = 180.0
    max_retries: int = 3
    backoff_s: float = 2.0

    @property
    def endpoint_name(self) -> str:
        """What a run records about the endpoint: its host, never the key or the full URL."""
        if not self.base_url:
            return "api.openai.com"
        parsed = urlparse(self.base_url)
        if not parsed.hostname:
            return "custom endpoint"
        # hostname/port only: credentials embedded in the URL must never reach a run.
        return f"{parsed.hostname}:{parsed.port}" if parsed.port else parsed.hostname


def api_key_configured() -> bool:
    return bool(os.environ.get("OPENAI_API_KEY"))


def default_model() -> str:
    """The model `--agent openai` uses without `--model`: $SKILLBASE_MODEL, else DEFAULT_MODEL."""
    return env("SKILLBASE_MODEL") or DEFAULT_MODEL


def load_config(model: str | None = None, base_url: str | None = None, timeout_s: float | None = None,
                max_retries: int | None = None) -> LLMConfig:
    return LLMConfig(
        model=model or default_model(),
        base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
        timeout_s=timeout_s if timeout_s is not None else float(env("SKILLBASE_LLM_TIMEOUT") or 180),
        max_retries=max_retries if max_retries is not None else int(env("SKILLBASE_LLM_RETRIES") or 3),
    )


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    duration_s: float
    tries: int


class ChatClient:
    """One configured endpoint; `complete(messages)` returns the reply text and token counts."""

    def __init__(self, config: LLMConfig):
        if not api_key_configured():
            raise EnvironmentProblem(
                "no LLM endpoint is configured (OPENAI_API_KEY is not set)",
                hint="export OPENAI_API_KEY (and OPENAI_BASE_URL for a local server), "
                     "or use --agent none / --agent external")
        import openai  # 0.8 s to import: only a client that talks to an endpoint pays it

        self.config = config
        self._openai = openai
        # Retries are ours (with backoff and logging), so the library's own are switched off.
        self._client = openai.OpenAI(base_url=config.base_url, timeout=config.timeout_s, max_retries=0)

    def complete(self, messages: list[dict], temperature: float = 0.2, sleep=time.sleep) -> Completion:
        openai = self._openai
        transient = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                     openai.InternalServerError)
        last_error = "no attempt made"
        started = time.monotonic()
        for attempt in range(1, self.config.max_retries + 1):
            try:
                response = self._client.chat.completions.create(
                    model=self.config.model, messages=messages, temperature=temperature)
            except transient as error:
                last_error = _describe(error)
                if attempt < self.config.max_retries:
                    sleep(self.config.backoff_s * 2 ** (attempt - 1))
                continue
            except (ValueError, openai.APIResponseValidationError) as error:
                # A body that is not the protocol's JSON: a broken proxy or server; worth another try.
                last_error = f"malformed response: {str(error)[:200]}"
                if attempt < self.config.max_retries:
                    sleep(self.config.backoff_s * 2 ** (attempt - 1))
                continue
            except openai.APIStatusError as error:
                # 4xx other than 429: retrying will not help (bad model name, auth, request too large).
                raise LLMUnavailable(f"{self.config.endpoint_name} refused the request: {_describe(error)}") from None
            text = _reply_text(response)
            usage = getattr(response, "usage", None)
            return Completion(text=text,
                              prompt_tokens=getattr(usage, "prompt_tokens", None),
                              completion_tokens=getattr(usage, "completion_tokens", None),
                              duration_s=time.monotonic() - started, tries=attempt)
        raise LLMUnavailable(f"{self.config.endpoint_name} failed {self.config.max_retries} times; "
                             f"last error: {last_error}")


def _reply_text(response) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return ""
    return content or ""


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    name = type(error).__name__
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{name}{f' {status}' if status else ''}: {message}"[:300]
