"""A small float slider: ←/→ fine step, shift+←/→ and page up/down coarse step, home/end, mouse click/drag.

Posts `Slider.Changed(slider, value)`; renders `label ━━━━━●──── 0.70`.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class Slider(Widget, can_focus=True):
    # Shown in the footer while a slider has the focus (it is first there), in pairs: one label per pair.
    _STEP = Binding.Group("Step", compact=True)
    _COARSE = Binding.Group("Coarse", compact=True)
    _ENDS = Binding.Group("Min/max")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "left", "step(-1)", "Decrease", tooltip="Decrease by one step (0.01)", group=_STEP, id="slider.decrease"
        ),
        Binding(
            "right", "step(1)", "Increase", tooltip="Increase by one step (0.01)", group=_STEP, id="slider.increase"
        ),
        Binding(
            "shift+left,pagedown",
            "step(-10)",
            "Decrease (coarse)",
            tooltip="Decrease by ten steps (0.1)",
            group=_COARSE,
            id="slider.decrease_coarse",
        ),
        Binding(
            "shift+right,pageup",
            "step(10)",
            "Increase (coarse)",
            tooltip="Increase by ten steps (0.1)",
            group=_COARSE,
            id="slider.increase_coarse",
        ),
        Binding("home", "to_min", "Minimum", group=_ENDS, id="slider.min"),
        Binding("end", "to_max", "Maximum", group=_ENDS, id="slider.max"),
    ]
    BINDING_GROUP_TITLE = "Slider"

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "slider--bar",
        "slider--fill",
        "slider--knob",
        "slider--label",
        "slider--value",
    }

    DEFAULT_CSS = """
    Slider {
        height: 1;
        width: 1fr;
    }
    Slider > .slider--fill { color: $primary; }
    Slider > .slider--bar { color: $panel-lighten-2; }
    Slider > .slider--knob { color: $foreground; text-style: bold; }
    Slider > .slider--label { color: $foreground-muted; }
    Slider > .slider--value { color: $foreground; text-style: bold; }
    Slider:focus > .slider--knob { color: $accent; }
    Slider:focus > .slider--label { color: $foreground; text-style: bold; }
    Slider:disabled { opacity: 0.5; }
    """

    value: reactive[float] = reactive(0.0)

    class Changed(Message):
        def __init__(self, slider: Slider, value: float) -> None:
            super().__init__()
            self.slider = slider
            self.value = value

        @property
        def control(self) -> Slider:
            return self.slider

    def __init__(
        self,
        value: float = 0.0,
        *,
        min: float = 0.0,
        max: float = 1.0,
        step: float = 0.01,
        label: str = "",
        label_width: int = 0,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.min = min
        self.max = max
        self.step = step
        self.label = label
        self.label_width = label_width or (len(label) + 1 if label else 0)
        self._dragging = False
        self.set_reactive(Slider.value, self._clamp(value))

    # ------------------------------------------------------------ value

    def _clamp(self, v: float) -> float:
        v = min(max(float(v), self.min), self.max)
        steps = round((v - self.min) / self.step)
        return round(self.min + steps * self.step, 6)

    def validate_value(self, value: float) -> float:
        return self._clamp(value)

    def watch_value(self, old: float, new: float) -> None:
        if old != new:
            self.post_message(self.Changed(self, new))

    def action_step(self, n: int) -> None:
        self.value = self._clamp(self.value + n * self.step)

    def action_to_min(self) -> None:
        self.value = self.min

    def action_to_max(self) -> None:
        self.value = self.max

    # ------------------------------------------------------------ rendering

    @property
    def _value_text(self) -> str:
        return f"{self.value:.2f}"

    def _track(self) -> tuple[int, int]:
        """(first column, width) of the track inside the widget."""
        start = self.label_width
        width = max(3, self.size.width - start - len(self._value_text) - 1)
        return start, width

    def render(self) -> Content:
        start, width = self._track()
        frac = 0.0 if self.max == self.min else (self.value - self.min) / (self.max - self.min)
        knob = min(width - 1, round(frac * (width - 1)))
        label_style = self.get_visual_style("slider--label")
        parts = [
            (self.label.ljust(start)[:start], label_style),
            ("━" * knob, self.get_visual_style("slider--fill")),
            ("●", self.get_visual_style("slider--knob")),
            ("─" * (width - knob - 1), self.get_visual_style("slider--bar")),
            (" " + self._value_text, self.get_visual_style("slider--value")),
        ]
        return Content.assemble(*parts)

    # ------------------------------------------------------------ mouse

    def _value_at(self, x: int) -> float:
        start, width = self._track()
        frac = (x - start) / max(1, width - 1)
        return self._clamp(self.min + min(max(frac, 0.0), 1.0) * (self.max - self.min))

    async def _on_mouse_down(self, event: events.MouseDown) -> None:
        if self.disabled:
            return
        self.focus()
        self._dragging = True
        self.capture_mouse()
        self.value = self._value_at(event.x)
        event.stop()

    async def _on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self.value = self._value_at(event.x)
            event.stop()

    async def _on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            event.stop()
