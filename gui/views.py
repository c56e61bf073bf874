"""Before and after views: side by side, or one split view with a draggable divider.

Zoom and pan are locked together; the before view also draws the regions the noise estimate
used and the rectangle the user drags for "Use this region".
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QTimer
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False)

REGION_COLOR = QColor(255, 200, 0)
REGIONS_DRAWN = 64  # at most this many boxes are outlined (strong noise makes most blocks "flat")


def _image_view() -> pg.ViewBox:
    view = pg.ViewBox(lockAspect=True, invertY=True, enableMenu=False)
    view.setBackgroundColor(QColor(30, 30, 30))
    return view


class ComparisonView(pg.GraphicsLayoutWidget):
    """Two linked image views (before | after) or one split view (before left of the divider)."""

    _fitted = True  # until the user zooms or pans, the frame is kept fitted to the view

    def __init__(self) -> None:
        super().__init__()
        self.before_view, self.after_view = _image_view(), _image_view()
        self.before_label = self.addLabel("Before (noisy)", row=0, col=0)
        self.after_label = self.addLabel("After (denoised)", row=0, col=1)
        self.addItem(self.before_view, row=1, col=0)
        self.addItem(self.after_view, row=1, col=1)
        self.after_view.setXLink(self.before_view)
        self.after_view.setYLink(self.before_view)
        self.before_image, self.after_image, self.split_image = pg.ImageItem(), pg.ImageItem(), pg.ImageItem()
        self.before_view.addItem(self.before_image)
        self.after_view.addItem(self.after_image)
        self.before_view.addItem(self.split_image)
        self.divider = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("w", width=2))
        self.divider.setZValue(10)
        self.before_view.addItem(self.divider)
        self.divider.sigPositionChanged.connect(self._draw_split)
        self.region_items: list[QGraphicsRectItem] = []
        self.roi: pg.RectROI | None = None
        self._after: np.ndarray | None = None
        self._shape: tuple[int, ...] | None = None
        self.split = False
        self.before_view.sigRangeChangedManually.connect(self._user_moved)
        self.set_split(True)

    def set_images(self, before: np.ndarray, after: np.ndarray) -> None:
        """Show uint8 frames (H, W[, C]); the view fits them when their size changes."""
        resized = before.shape != self._shape
        self._shape, self._after = before.shape, after
        self.before_image.setImage(before, levels=(0, 255), autoLevels=False)
        self.after_image.setImage(after, levels=(0, 255), autoLevels=False)
        if resized:
            self.divider.setBounds((0, before.shape[1]))
            self.divider.setValue(before.shape[1] / 2)
            self.fit()
        self._draw_split()

    def set_split(self, split: bool) -> None:
        """One split view (True) or the two views side by side (False)."""
        self.split = split
        self.after_view.setVisible(not split)
        self.after_label.setVisible(not split)
        self.ci.layout.setColumnStretchFactor(1, 0 if split else 1)
        self.before_label.setText("Before | After (drag the line)" if split else "Before (noisy)")
        self.divider.setVisible(split)
        self.split_image.setVisible(split)
        self._draw_split()
        if self._fitted:
            QTimer.singleShot(0, self.fit)

    def _draw_split(self) -> None:
        if not self.split or self._after is None:
            return
        column = int(np.clip(round(self.divider.value()), 0, self._after.shape[1] - 1))
        self.split_image.setImage(self._after[:, column:], levels=(0, 255), autoLevels=False)
        self.split_image.setPos(column, 0)

    def fit(self) -> None:
        """Show the whole frame (and keep it so while the view is resized, until the user zooms)."""
        self._fitted = True
        if self._shape is not None:
            self.before_view.setRange(QRectF(0, 0, self._shape[1], self._shape[0]), padding=0)

    def _user_moved(self, *_: object) -> None:
        self._fitted = False

    def resizeEvent(self, event: object) -> None:  # noqa: N802 (Qt's naming)
        super().resizeEvent(event)
        if self._fitted:
            QTimer.singleShot(0, self.fit)  # once the layout has the new size

    def actual_pixels(self) -> None:
        """One frame pixel per screen pixel, around the view's centre."""
        rect = self.before_view.viewRect()
        width, height = self.before_view.width(), self.before_view.height()
        centre = rect.center()
        self.before_view.setRange(QRectF(centre.x() - width / 2, centre.y() - height / 2, width, height), padding=0)

    def show_regions(self, regions: list[tuple[int, int, int, int]]) -> None:
        """Outline the boxes (x, y, w, h) the noise estimate used on the before view (an even
        sample of at most REGIONS_DRAWN of them)."""
        for item in self.region_items:
            self.before_view.removeItem(item)
        self.region_items = []
        pen = QPen(REGION_COLOR)
        pen.setCosmetic(True)
        for x, y, w, h in regions[:: max(1, -(-len(regions) // REGIONS_DRAWN))]:
            item = QGraphicsRectItem(x, y, w, h)
            item.setPen(pen)
            item.setZValue(5)
            self.before_view.addItem(item)
            self.region_items.append(item)

    def show_roi(self, box: tuple[int, int, int, int]) -> None:
        """A rectangle the user can drag and resize on the before view."""
        if self.roi is not None:
            self.before_view.removeItem(self.roi)
        x, y, w, h = box
        self.roi = pg.RectROI([x, y], [w, h], pen=pg.mkPen((0, 200, 255), width=2))
        self.roi.setZValue(20)
        self.before_view.addItem(self.roi)

    def roi_box(self) -> tuple[int, int, int, int] | None:
        """The dragged rectangle as (x, y, w, h) in whole pixels, or None."""
        if self.roi is None:
            return None
        (x, y), (w, h) = self.roi.pos(), self.roi.size()
        return round(x), round(y), round(w), round(h)
