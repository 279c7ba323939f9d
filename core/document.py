"""The report document, independent of how it is drawn: a title, a conclusion, key figures and
sections of paragraphs, bullets, tables and charts (bar, scatter, line).

The plan report (``core.planner.report``) and the probe report (``core.probes.output.report``) both
build one, so ``gui/pdf.py`` draws both with one look and ``gui/charts.py`` shows the same chart
data in the window. It is plain data (pydantic models), so a report also prints as JSON (`tuneplan
probe-report --json`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field


class Series(BaseModel):
    name: str
    values: list[float]
    style: Literal["solid", "dashed"] = Field("solid", description="dashed for a reference line")


class _Chart(BaseModel):
    title: str
    caption: str | None = Field(
        None, description="what the chart holds constant and how to read it"
    )


class BarChart(_Chart):
    kind: Literal["bar"] = "bar"
    unit: str
    categories: list[str]
    category_labels: list[str] | None = Field(
        None, description="what the axis prints (default: categories)"
    )
    series: list[Series]
    stacked: bool = False
    markers: list[float | None] | None = Field(
        None, description="one line per category, e.g. GPU capacity"
    )
    marker_label: str | None = None

    def labels(self) -> list[str]:
        return self.category_labels or self.categories


class Point(BaseModel):
    x: float
    y: float
    label: str = ""
    highlight: bool = False


class ScatterChart(_Chart):
    kind: Literal["scatter"] = "scatter"
    x_label: str
    y_label: str
    points: list[Point]
    highlight_label: str = "Pareto front"


class LineChart(_Chart):
    kind: Literal["line"] = "line"
    x_label: str
    y_label: str
    x: list[float]
    series: list[Series]
    vline: float | None = None
    vline_label: str | None = None
    y_max: float | None = Field(
        None, description="clip the y axis here (a curve that shoots up at one end)"
    )
    x_percent: bool = Field(False, description="x values are fractions shown as percentages")


Chart = Annotated[BarChart | ScatterChart | LineChart, Field(discriminator="kind")]


class Table(BaseModel):
    kind: Literal["table"] = "table"
    header: list[str]
    rows: list[list[str]]
    widths: list[float] | None = Field(None, description="relative column widths")


class Paragraph(BaseModel):
    kind: Literal["paragraph"] = "paragraph"
    text: str


class Bullets(BaseModel):
    kind: Literal["bullets"] = "bullets"
    items: list[str]


Block = Annotated[
    Paragraph | Bullets | Table | BarChart | ScatterChart | LineChart, Field(discriminator="kind")
]


class Section(BaseModel):
    title: str
    blocks: list[Block]


class KeyFigure(BaseModel):
    label: str
    value: str


class Report(BaseModel):
    title: str
    date: str
    conclusion: str
    key_figures: list[KeyFigure]
    sections: list[Section]
