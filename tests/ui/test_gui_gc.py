"""Garbage collection on the GUI thread only: the automatic collector is off while the window runs, and the
GUI thread's timer collects cycles as it would."""

import gc
import weakref

from specchat.ui.gui_gc import GuiThreadCollector


class Node:
    pass


def test_collection_moves_to_the_gui_thread_and_is_given_back(qtbot):
    was_enabled = gc.isenabled()
    collector = GuiThreadCollector(interval_ms=10)
    try:
        assert not gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the cyclic collector frees it
        gone = weakref.ref(a)
        del a, b
        collector.thresholds = (0, 0, 0)  # every generation is due
        qtbot.waitUntil(lambda: gone() is None, timeout=30_000)  # the timer collected it
    finally:
        collector.stop()
    assert gc.isenabled()
    if not was_enabled:
        gc.disable()
