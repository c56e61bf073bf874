"""Draw the application icon, resources/icon.png (256 x 256): a rounded tile whose left half is a
noisy color gradient and whose right half is the same gradient clean, split by a diagonal.

    QT_QPA_PLATFORM=offscreen python scripts/make_icon.py
"""

import argparse
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QImage, QPainter, QPainterPath, QPen

SIZE = 256
OUTPUT = Path(__file__).resolve().parent.parent / "resources" / "icon.png"


def gradient_tile() -> np.ndarray:
    """RGBA (SIZE, SIZE, 4): a warm-to-cool gradient, with noise left of the diagonal."""
    rows, cols = np.mgrid[0:SIZE, 0:SIZE] / (SIZE - 1)
    rgb = np.stack([0.95 - 0.6 * rows, 0.35 + 0.4 * cols * (1 - rows), 0.3 + 0.6 * rows], axis=-1)
    noise = np.random.default_rng(7).normal(0, 0.12, rgb.shape)
    noisy_side = (cols + rows < 1.0)[..., None]
    rgb = np.clip(rgb + noise * noisy_side, 0, 1)
    alpha = np.ones((*rgb.shape[:2], 1))
    return np.ascontiguousarray((np.concatenate([rgb, alpha], axis=-1) * 255).astype(np.uint8))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # no options: --help only
    QGuiApplication([])
    pixels = gradient_tile()
    tile = QImage(pixels.data, SIZE, SIZE, 4 * SIZE, QImage.Format.Format_RGBA8888)
    icon = QImage(SIZE, SIZE, QImage.Format.Format_RGBA8888)
    icon.fill(QColor(0, 0, 0, 0))
    painter = QPainter(icon)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    outline = QPainterPath()
    outline.addRoundedRect(QRectF(8, 8, SIZE - 16, SIZE - 16), 44, 44)
    painter.setClipPath(outline)
    painter.drawImage(0, 0, tile)
    painter.setClipping(False)
    painter.setPen(QPen(QColor(255, 255, 255, 230), 6))
    painter.drawLine(SIZE - 40, 40, 40, SIZE - 40)
    painter.setPen(QPen(QColor(30, 30, 40), 4))
    painter.setBrush(QBrush())
    painter.drawPath(outline)
    painter.end()
    icon.save(str(OUTPUT))
    print(OUTPUT)


if __name__ == "__main__":
    main()
