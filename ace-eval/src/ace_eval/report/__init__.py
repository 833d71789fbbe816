"""`ace-eval report`: one self-contained HTML page about one or more run folders."""

from ace_eval.report.read import ReportRun, read_report_run
from ace_eval.report.render import render_report, write_report

__all__ = ["ReportRun", "read_report_run", "render_report", "write_report"]
