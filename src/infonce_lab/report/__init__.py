"""Rendering of reports/index.html and reports/REPORT.md from metrics, tables and plot data."""
