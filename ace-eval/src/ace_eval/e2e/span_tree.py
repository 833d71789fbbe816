"""The span tree of a training run: `train.epoch` spans under the run's span, a `train.sample` span per sample
under its epoch, and every step of the sample (redact, reflect, update, quarantine, checkpoint) under that.

An epoch's span opens when its first sample starts and ends when its last sample committed (and, when the
pipeline has `end_of_epoch` steps, after they ran under it): samples of several epochs may be in flight at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.trace import Span

from ace.observability import AttributeInput, ace_span, current_span, open_span
from ace_eval.e2e.samples_plan import PlannedSample

__all__ = ["EpochSpans"]


class EpochSpans:
    """Opens and ends the `train.epoch` spans of one training run, and starts each sample's span under its epoch."""

    def __init__(
        self, pending: Iterable[PlannedSample], *, attributes: Mapping[str, AttributeInput], hold: bool
    ) -> None:
        """`attributes`: added to every epoch and sample span (the run's id and folder); `hold`: keep an epoch open
        after its last sample, for its `end_of_epoch` steps (`epoch_end`)."""
        self._remaining: Counter[int] = Counter(p.epoch for p in pending)
        self._attributes = dict(attributes)
        self._hold = hold
        self._open: dict[int, Span] = {}

    def _epoch(self, epoch: int) -> Span:
        span = self._open.get(epoch)
        if span is None:
            span = self._open[epoch] = open_span("train.epoch", {**self._attributes, "ace.epoch": epoch})
        return span

    def _end(self, epoch: int) -> None:
        span = self._open.pop(epoch, None)
        if span is not None:
            span.end()

    @contextmanager
    def sample(self, item: PlannedSample) -> Iterator[Span]:
        """The sample's `train.sample` span, current inside, under its epoch's span."""
        attrs: dict[str, AttributeInput] = {
            **self._attributes,
            "ace.trace_uid": item.trace_uid,
            "ace.epoch": item.epoch,
            "ace.sample_index": item.index,
        }
        try:
            with current_span(self._epoch(item.epoch)), ace_span("train.sample", attrs) as span:
                yield span
        finally:
            self._remaining[item.epoch] -= 1
            if self._remaining[item.epoch] <= 0 and not self._hold:
                self._end(item.epoch)

    @contextmanager
    def epoch_end(self, epoch: int) -> Iterator[None]:
        """The epoch's span, current inside (its `end_of_epoch` steps), ended on exit."""
        try:
            with current_span(self._epoch(epoch)):
                yield
        finally:
            self._end(epoch)

    def close(self) -> None:
        """End every span still open (a run that stopped early)."""
        for epoch in list(self._open):
            self._end(epoch)
