"""How the main window is put together: where its widgets sit, and its toolbar and menus.

``lay_out`` places the error banner, the picture, the timeline, the export queue, the side panels
(the readouts below the scrolling controls) and the status bar's widgets; ``build_actions`` makes
the window's actions and puts them in the toolbar and the menus. Both run once, from
``MainWindow.__init__``, and set the parts they make as the window's attributes; what the actions
do stays the window's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QSplitter, QStyle, QToolBar, QVBoxLayout, QWidget

from .about import show_about
from .preset_menu import PresetMenu
from .recent_files import RecentFilesMenu
from .view_actions import ViewActions, window_action

if TYPE_CHECKING:
    from .window import MainWindow


def lay_out(window: MainWindow) -> None:
    """Place the window's widgets: the picture and the timeline beside the side panels, in a splitter."""
    controls = QWidget()
    controls_layout = QVBoxLayout(controls)
    for widget in (window.parameters, window.noise):
        controls_layout.addWidget(widget)
    controls_layout.addStretch(1)
    window.side_scroll = QScrollArea()
    window.side_scroll.setWidget(controls)
    window.side_scroll.setWidgetResizable(True)
    window.side_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    # The readouts stay below the scrolling controls, in sight at any window height.
    side = QWidget()
    side.setMinimumWidth(440)
    side_layout = QVBoxLayout(side)
    side_layout.setContentsMargins(0, 0, 0, 0)
    side_layout.addWidget(window.side_scroll, 1)
    side_layout.addWidget(window.readouts)
    frame_row = QHBoxLayout()
    frame_row.addWidget(window.frame_slider, 1)
    frame_row.addWidget(window.frame_label)
    centre = QWidget()
    centre_layout = QVBoxLayout(centre)
    centre_layout.addWidget(window.banner)
    centre_layout.addWidget(window.view, 1)
    centre_layout.addLayout(frame_row)
    centre_layout.addWidget(window.exports)
    window.splitter = QSplitter()
    window.splitter.addWidget(centre)
    window.splitter.addWidget(side)
    window.splitter.setStretchFactor(0, 1)
    window.splitter.setSizes([1000, 440])
    window.setCentralWidget(window.splitter)
    # The last export's summary stays until the next one: a temporary status message would
    # be wiped by the first status tip of the toolbar button under the mouse.
    window.last_export = QLabel()
    window.statusBar().addPermanentWidget(window.last_export)
    window.statusBar().addPermanentWidget(window.busy)
    window.resize(1400, 820)


def _action(
    window: MainWindow,
    text: str,
    shortcut: str | None,
    slot: Callable[[], object],
    icon: QStyle.StandardPixmap | None = None,
) -> QAction:
    """An action of the window (``window_action``)."""
    return window_action(window, text, shortcut, slot, icon)


def build_actions(window: MainWindow) -> None:
    """Make the window's actions, its toolbar and its menus (File, View, Filter, Playback, Presets, Help)."""
    pixmap = QStyle.StandardPixmap
    window.open_action = _action(window, "Open…", "Ctrl+O", window._choose_file, pixmap.SP_DialogOpenButton)
    window.export_action = _action(window, "Export…", "Ctrl+E", window.export_dialog, pixmap.SP_DialogSaveButton)
    window.play_action = _action(window, "Play", "Space", window.toggle_play, pixmap.SP_MediaPlay)
    window.back_action = _action(window, "Previous frame", "Left", lambda: window.step(-1), pixmap.SP_MediaSeekBackward)
    window.forward_action = _action(window, "Next frame", "Right", lambda: window.step(1), pixmap.SP_MediaSeekForward)
    window.first_action = _action(window, "First frame", "Home", lambda: window.go_to(0), pixmap.SP_MediaSkipBackward)
    window.last_action = _action(window, "Last frame", "End", lambda: window.go_to(None), pixmap.SP_MediaSkipForward)
    window.in_action = _action(window, "Mark in", "I", lambda: window.set_mark("in"))
    window.out_action = _action(window, "Mark out", "O", lambda: window.set_mark("out"))
    window.clear_marks_action = _action(window, "Clear marks", "Alt+X", window.clear_marks)
    window.view_actions = ViewActions(window, window.view)
    window.regions_action = _action(window, "Show noise regions", "R", window._show_regions_changed)
    window.regions_action.setCheckable(True)
    window.regions_action.setChecked(True)
    window.type_h_action = _action(window, "Type h (the strength)", "H", window._type_h)
    window.tune_action = _action(window, "Tune for N fps…", None, window.tune_for_fps)
    window.tune_action.setStatusTip(
        "Time each search window exporting this clip here and choose the best-estimated one that reaches a frame rate"
    )
    about = _action(window, "About NLMeans Studio", None, lambda: show_about(window, window.timed))
    toolbar = QToolBar("Main")
    toolbar.setObjectName("main-toolbar")
    for action in (
        window.open_action,
        window.export_action,
        None,
        window.first_action,
        window.back_action,
        window.play_action,
        window.forward_action,
        window.last_action,
        None,
        window.in_action,
        window.out_action,
        None,
        window.view_actions.split,
        window.view_actions.flip,
        window.view_actions.difference,
        window.view_actions.fit,
        window.view_actions.actual,
    ):
        toolbar.addAction(action) if action else toolbar.addSeparator()
    window.addToolBar(toolbar)
    window.toolbar = toolbar
    menus = window.menuBar()
    file_menu = menus.addMenu("&File")
    file_menu.addAction(window.open_action)
    file_menu.addAction(_action(window, "Open stream…", None, window._choose_stream))
    window.recent_menu = RecentFilesMenu(window.settings, window)
    window.recent_menu.chosen.connect(window.open_file)
    file_menu.addMenu(window.recent_menu)
    file_menu.addAction(window.export_action)
    file_menu.addSeparator()
    file_menu.addAction(_action(window, "Quit", "Ctrl+Q", window.close))
    window.file_menu = file_menu
    view_menu = menus.addMenu("&View")
    window.view_actions.add_to(view_menu, window.regions_action)
    view_menu.addSeparator()
    view_menu.addAction(window.type_h_action)
    window.filter_menu = menus.addMenu("F&ilter")
    window.filter_menu.addAction(window.tune_action)
    play_menu = menus.addMenu("P&layback")
    for action in (
        window.play_action,
        window.back_action,
        window.forward_action,
        window.first_action,
        window.last_action,
    ):
        play_menu.addAction(action)
    play_menu.addSeparator()
    for action in (window.in_action, window.out_action, window.clear_marks_action):
        play_menu.addAction(action)
    presets = PresetMenu(window.settings, window)
    presets.load_requested.connect(window.load_preset)
    presets.save_requested.connect(window.save_preset)
    menus.addMenu(presets)
    menus.addMenu("&Help").addAction(about)
