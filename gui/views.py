"""The picture: before and after split by a draggable divider, side by side, flipped, or their difference.

Every mode but side by side is one pane. Side by side is two panes of the same size showing the
same area of the frame: zoom and pan in either moves both. The left pane also draws the regions
the noise estimate used, over the frame they were found on only (they can be hidden), and the
rectangle for "Use this region", drawn with the mouse.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsTextItem

from nlmeans_studio.engine import difference_image

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False)

REGION_COLOR = QColor(255, 200, 0)
ROI_COLOR = QColor(0, 200, 255)
REGIONS_DRAWN = 64  # at most this many boxes are outlined (strong noise makes most blocks "flat")
MODES = ("split", "side", "before", "after", "difference")
TITLES = {
    "split": "Before | After (drag the line)",
    "before": "Before (noisy)",
    "after": "After (denoised)",
    "difference": "Difference: what the filter removed (x4)",
}


class FrameViewBox(pg.ViewBox):
    """A pane showing a frame; while ``drawing``, a left drag draws a rectangle instead of panning."""

    rectangle_drawn = Signal(object)  # (x, y, width, height) in whole frame pixels, inside the frame

    def __init__(self) -> None:
        super().__init__(lockAspect=True, invertY=True, enableMenu=False)
        self.setBackgroundColor(QColor(30, 30, 30))
        self.drawing = False
        self.frame_rect: QRectF | None = None
        self._rubber_band = QGraphicsRectItem()
        pen = QPen(ROI_COLOR)
        pen.setCosmetic(True)
        pen.setStyle(Qt.PenStyle.DashLine)
        self._rubber_band.setPen(pen)
        self._rubber_band.setZValue(30)
        self._rubber_band.hide()
        self.addItem(self._rubber_band, ignoreBounds=True)
        self._edge_letters = [_title(self) for _ in range(4)]  # top, bottom, left, right
        self.sigResized.connect(self._place_edge_letters)

    def set_edge_letters(self, letters: tuple[str, str, str, str]) -> None:
        """Letters at the middle of the pane's top, bottom, left and right edges (a volume's
        anatomical directions, e.g. "A", "P", "R", "L"); "" draws none."""
        for item, letter in zip(self._edge_letters, letters, strict=True):
            item.setHtml(_title_html(letter) if letter else "")
        self._place_edge_letters()

    def _place_edge_letters(self, *_: object) -> None:
        pane = self.boundingRect()
        for item, (across, down) in zip(self._edge_letters, ((0.5, 0), (0.5, 1), (0, 0.5), (1, 0.5)), strict=True):
            size = item.boundingRect()
            x = 4 + across * (pane.width() - size.width() - 8)
            y = 4 + down * (pane.height() - size.height() - 8)
            # Top and bottom just right of the middle, where the split view's line starts: it hid "I".
            item.setPos(x + (size.width() / 2 + 3 if across == 0.5 else 0), y)

    def mouseDragEvent(self, event, axis=None) -> None:  # noqa: N802 (pyqtgraph's naming)
        if not self.drawing or self.frame_rect is None or event.button() != Qt.MouseButton.LeftButton:
            return super().mouseDragEvent(event, axis)
        event.accept()
        corners = QRectF(self.mapSceneToView(event.buttonDownScenePos()), self.mapSceneToView(event.scenePos()))
        rect = corners.normalized().intersected(self.frame_rect)
        self._rubber_band.setRect(rect)
        self._rubber_band.setVisible(not event.isFinish())
        if event.isFinish():
            self.drawing = False
            self.setCursor(Qt.CursorShape.ArrowCursor)
            left, top = math.floor(rect.left()), math.floor(rect.top())
            width, height = math.ceil(rect.right()) - left, math.ceil(rect.bottom()) - top
            if width > 0 and height > 0:
                self.rectangle_drawn.emit((left, top, width, height))

    def start_drawing(self) -> None:
        """The next left drag draws a rectangle (clamped to the frame)."""
        self.drawing = True
        self.setCursor(Qt.CursorShape.CrossCursor)


def _title_html(text: str) -> str:
    return f'<span style="background-color: rgba(0, 0, 0, 160); color: white">&nbsp;{text}&nbsp;</span>'


def _title(view: FrameViewBox) -> QGraphicsTextItem:
    """A pane's title, in its top-left corner over the picture (it does not move with zoom and pan)."""
    title = QGraphicsTextItem(view)
    title.setPos(4, 4)
    title.setZValue(40)
    return title


class ComparisonView(pg.GraphicsLayoutWidget):
    """The before and after frames in one of ``MODES``; emits ``region_drawn`` after a drawn rectangle."""

    region_drawn = Signal(object)  # (x, y, width, height)
    _fitted = True  # until the user zooms or pans, the frame is kept fitted to the view

    def __init__(self) -> None:
        super().__init__()
        self.main_view, self.after_view = FrameViewBox(), FrameViewBox()
        self.main_label, self.after_label = _title(self.main_view), _title(self.after_view)
        self.after_label.setHtml(_title_html(TITLES["after"]))
        self.main_image, self.after_image, self.split_image = pg.ImageItem(), pg.ImageItem(), pg.ImageItem()
        self.main_view.addItem(self.main_image)
        self.after_view.addItem(self.after_image)
        self.main_view.addItem(self.split_image)
        self.divider = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("w", width=2))
        self.divider.setZValue(10)
        self.main_view.addItem(self.divider)
        self.divider.sigPositionChanged.connect(self._draw_split)
        self.region_items: list[QGraphicsRectItem] = []
        self.regions_visible = True  # the user's choice, for the boxes and the drawn rectangle
        self.regions_on_frame = False  # whether the picture shown is the frame the boxes were found on
        self.roi: pg.RectROI | None = None
        self._before: np.ndarray | None = None
        self._after: np.ndarray | None = None
        self._shape: tuple[int, ...] | None = None
        self._note = ""  # what the after half says of the pass it shows ("" for the exact frame)
        self._linking = False
        self.mode = "split"
        self.main_view.sigRangeChangedManually.connect(self._user_moved)
        self.after_view.sigRangeChangedManually.connect(self._user_moved)
        self.main_view.sigRangeChanged.connect(lambda: self._link(self.main_view, self.after_view))
        self.after_view.sigRangeChanged.connect(lambda: self._link(self.after_view, self.main_view))
        self.main_view.rectangle_drawn.connect(self._drawn)
        self.set_mode("split")

    def set_images(self, before: np.ndarray, after: np.ndarray, note: str = "") -> None:
        """Show uint8 frames (H, W[, C]), ``note`` in the titles where after shows (which pass
        it is: "quick pass ..."); the view fits them when their size changes."""
        resized = before.shape != self._shape
        self._shape, self._before, self._after = before.shape, before, after
        if note != self._note:
            self._note = note
            self._show_titles()
        if resized:
            self.main_view.frame_rect = QRectF(0, 0, before.shape[1], before.shape[0])
            self.divider.setBounds((0, before.shape[1]))
            self.divider.setValue(before.shape[1] / 2)
            self.fit()
        self._draw()

    def clear_images(self) -> None:
        """Show no picture (a frame that could not be read): never the last frame's under another number."""
        self._before = self._after = None
        for image in (self.main_image, self.after_image, self.split_image):
            image.clear()

    def set_pixel_aspect(self, ratio: float) -> None:
        """Show a pixel ``ratio`` times as wide as it is high (a volume's plane of anisotropic
        voxels: their width over their height), fitted again."""
        for view in (self.main_view, self.after_view):
            view.setAspectLocked(True, ratio=ratio)
        self.fit()

    def set_edge_letters(self, letters: tuple[str, str, str, str]) -> None:
        """Letters at the middle of each pane's top, bottom, left and right edges ("" draws none)."""
        for view in (self.main_view, self.after_view):
            view.set_edge_letters(letters)

    def shown_image(self) -> np.ndarray | None:
        """The frame the (left) pane shows whole: before, after or their difference."""
        return self.main_image.image

    def set_mode(self, mode: str) -> None:
        """Show the frames as one of ``MODES``: split, side by side, before, after, difference."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.ci.clear()
        self.addItem(self.main_view, row=0, col=0)
        if mode == "side":
            self.addItem(self.after_view, row=0, col=1)
        self.ci.setGeometry(self.range)  # the layout's own size, not the one it shrank to while emptied
        self._show_titles()
        self.divider.setVisible(mode == "split")
        self.split_image.setVisible(mode == "split")
        self._draw()
        QTimer.singleShot(0, self, self._after_layout)

    def _show_titles(self) -> None:
        """Each pane's title, with the note on the pass shown where after shows."""
        note = f" · after: {self._note}" if self._note else ""
        main = "Before (noisy)" if self.mode == "side" else TITLES[self.mode] + ("" if self.mode == "before" else note)
        self.main_label.setHtml(_title_html(main))
        self.after_label.setHtml(_title_html(TITLES["after"] + note))

    def titles(self) -> str:
        """The titles shown, as text: the left pane's, and in side by side the right one's."""
        shown = [self.main_label] + ([self.after_label] if self.mode == "side" else [])
        return " | ".join(label.toPlainText().strip() for label in shown)

    def _draw(self) -> None:
        if self._after is None:
            return
        main = {"after": self._after, "difference": None}.get(self.mode, self._before)
        if main is None:
            main = difference_image(self._before, self._after)
        self.main_image.setImage(main, levels=(0, 255), autoLevels=False)
        if self.mode == "side":
            self.after_image.setImage(self._after, levels=(0, 255), autoLevels=False)
        self._draw_split()

    def _draw_split(self) -> None:
        if self.mode != "split" or self._after is None:
            return
        column = int(np.clip(round(self.divider.value()), 0, self._after.shape[1] - 1))
        self.split_image.setImage(self._after[:, column:], levels=(0, 255), autoLevels=False)
        self.split_image.setPos(column, 0)

    def _link(self, source: FrameViewBox, target: FrameViewBox) -> None:
        """Side by side: the other pane shows exactly the area this one shows (panes are equal)."""
        if self._linking or self.mode != "side":
            return
        self._linking = True
        try:
            target.setRange(source.viewRect(), padding=0)
        finally:
            self._linking = False

    def _after_layout(self) -> None:
        """Once the layout has its new size: fit the frame again, or keep the panes together."""
        if self.centralWidget is None:
            return  # closed: pyqtgraph has cleared the scene
        if self._fitted:
            self.fit()
        else:
            self._sync_after()

    def _sync_after(self) -> None:
        self._link(self.main_view, self.after_view)

    def fit(self) -> None:
        """Show the whole frame (and keep it so while the view is resized, until the user zooms)."""
        self._fitted = True
        if self._shape is not None:
            self.main_view.setRange(QRectF(0, 0, self._shape[1], self._shape[0]), padding=0)
            self._sync_after()

    def shown_box(self) -> tuple[int, int, int, int] | None:
        """The part of the frame on screen as (x, y, width, height) in whole pixels; None while
        the whole frame is fitted, or before any frame."""
        if self._fitted or self._shape is None:
            return None
        rect = self.main_view.viewRect().intersected(QRectF(0, 0, self._shape[1], self._shape[0]))
        if rect.isEmpty():
            return None
        left, top = math.floor(rect.left()), math.floor(rect.top())
        return left, top, math.ceil(rect.right()) - left, math.ceil(rect.bottom()) - top

    def _user_moved(self, *_: object) -> None:
        self._fitted = False

    def resizeEvent(self, event: object) -> None:  # noqa: N802 (Qt's naming)
        super().resizeEvent(event)
        QTimer.singleShot(0, self, self._after_layout)  # once the layout has the new size

    def actual_pixels(self) -> None:
        """One frame pixel per screen pixel, around the view's centre."""
        self._fitted = False
        rect = self.main_view.viewRect()
        width, height = self.main_view.width(), self.main_view.height()
        centre = rect.center()
        self.main_view.setRange(QRectF(centre.x() - width / 2, centre.y() - height / 2, width, height), padding=0)

    def show_regions(self, regions: list[tuple[int, int, int, int]]) -> None:
        """Outline the boxes (x, y, w, h) the noise estimate used (an even sample of at most
        REGIONS_DRAWN of them), shown where ``set_regions_visible`` and ``set_regions_on_frame`` say."""
        for item in self.region_items:
            self.main_view.removeItem(item)
        self.region_items = []
        pen = QPen(REGION_COLOR)
        pen.setCosmetic(True)
        for x, y, w, h in regions[:: max(1, -(-len(regions) // REGIONS_DRAWN))]:
            item = QGraphicsRectItem(x, y, w, h)
            item.setPen(pen)
            item.setZValue(5)
            self.main_view.addItem(item)
            self.region_items.append(item)
        self._show_region_items()

    def set_regions_visible(self, visible: bool) -> None:
        """Show or hide the estimate's boxes and the drawn rectangle."""
        self.regions_visible = visible
        if self.roi is not None:
            self.roi.setVisible(visible)
        self._show_region_items()

    def set_regions_on_frame(self, on_frame: bool) -> None:
        """Whether the picture shown is the frame the boxes were found on: elsewhere they outline
        nothing of the picture, and are hidden."""
        self.regions_on_frame = on_frame
        self._show_region_items()

    def _show_region_items(self) -> None:
        for item in self.region_items:
            item.setVisible(self.regions_visible and self.regions_on_frame)

    def start_drawing_region(self) -> None:
        """The next left drag on the (left) pane draws the region; panning resumes after it."""
        self.main_view.start_drawing()

    def _drawn(self, box: tuple[int, int, int, int]) -> None:
        self.show_roi(box)
        self.region_drawn.emit(box)

    def show_roi(self, box: tuple[int, int, int, int]) -> None:
        """A rectangle the user can move and resize, inside the frame."""
        self.clear_roi()
        x, y, w, h = box
        self.roi = pg.RectROI(
            [x, y], [w, h], pen=pg.mkPen(ROI_COLOR, width=2), maxBounds=self.main_view.frame_rect, snapSize=1
        )
        self.roi.setZValue(20)
        self.roi.setVisible(self.regions_visible)
        self.main_view.addItem(self.roi)

    def clear_roi(self) -> None:
        """Remove the rectangle, if any (a clip opened: it was drawn on another picture)."""
        if self.roi is not None:
            self.main_view.removeItem(self.roi)
            self.roi = None

    def roi_box(self) -> tuple[int, int, int, int] | None:
        """The rectangle as (x, y, w, h) in whole pixels inside the frame, or None."""
        if self.roi is None or self._shape is None:
            return None
        (x, y), (w, h) = self.roi.pos(), self.roi.size()
        left, top = max(0, round(x)), max(0, round(y))
        right, bottom = min(self._shape[1], round(x + w)), min(self._shape[0], round(y + h))
        return left, top, right - left, bottom - top

    def pane_centre(self) -> QPointF:
        """The left pane's centre in widget coordinates (for tests and scripts that click on it)."""
        return self.mapFromScene(self.main_view.sceneBoundingRect().center())
