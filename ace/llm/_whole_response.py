"""`WholeResponseModel`: the base of ACE's models, which produce each response whole (no token stream)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings

__all__ = ["WholeResponseModel"]


class WholeResponseModel(Model):
    """A model whose subclass answers a prepared request whole (`_respond`); streaming replays that answer."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Prepare the request (settings merged, unified settings resolved) and answer it."""
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        return await self._respond(messages, settings, params)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """The complete response replayed as a stream (one event per part), for event stream handlers."""
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        response = await self._respond(messages, settings, params)
        yield CompletedStreamedResponse(response, model_request_parameters=params, replay_events=True)

    @abstractmethod
    async def _respond(
        self, messages: list[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> ModelResponse:
        """The response to one prepared request."""
