"""Powertools Metrics as every handler makes them: POWERTOOLS_METRICS_DISABLED honoured for
every value, not only at the flush.

Powertools (3.x) checks the setting when a handler's metrics are flushed, but prints the metric
set whenever one metric reaches 100 values, and a disabled flush keeps the set: local mode, where
metrics are disabled, printed a raw EMF line every 100 values of a metric. Here a value added
while metrics are disabled is not kept at all."""

from __future__ import annotations

from aws_lambda_powertools import Metrics as _Metrics
from aws_lambda_powertools.metrics.base import MetricResolution, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled


class Metrics(_Metrics):
    """Powertools' Metrics, keeping nothing while metrics are disabled."""

    def add_metric(
        self,
        name: str,
        unit: MetricUnit | str,
        value: float,
        resolution: MetricResolution | int = 60,
    ) -> None:
        if is_metrics_disabled():
            return
        super().add_metric(name=name, unit=unit, value=value, resolution=resolution)


def metrics_of(service: str) -> Metrics:
    """The metrics of one function (namespace ChatMemory)."""
    return Metrics(namespace="ChatMemory", service=service)
