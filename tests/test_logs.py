"""The rotating error log: written in the log folder, named in error messages, absent when unwritable."""

import logging
import logging.handlers

import pytest

from specchat.logs import BACKUPS, MAX_BYTES, details_note, log_path, setup_logging, stop_logging
from specchat.paths import AppPaths


@pytest.fixture(autouse=True)
def no_log_afterwards():
    yield
    stop_logging()


def test_errors_are_written_to_a_rotating_file_in_the_log_folder(tmp_path):
    paths = AppPaths.under(tmp_path)
    assert setup_logging(paths.log_file) == paths.log_file == log_path()
    try:
        raise ValueError("the reply broke")
    except ValueError:
        logging.getLogger("specchat.ui.engine_client").exception("generation failed")
    logging.getLogger("specchat.store").info("routine detail")  # below WARNING: not written
    text = paths.log_file.read_text()
    assert "ERROR specchat.ui.engine_client" in text and "generation failed" in text
    assert "Traceback (most recent call last)" in text and "ValueError: the reply broke" in text
    assert "routine detail" not in text
    handler = next(
        h for h in logging.getLogger("specchat").handlers if isinstance(h, logging.handlers.RotatingFileHandler)
    )
    assert (handler.maxBytes, handler.backupCount) == (MAX_BYTES, BACKUPS) == (1_000_000, 3)
    assert details_note() == f" Details in {paths.log_file}."


def test_setting_up_twice_keeps_one_handler(tmp_path):
    setup_logging(tmp_path / "a" / "specchat.log")
    setup_logging(tmp_path / "b" / "specchat.log")
    logging.getLogger("specchat").error("once")
    handlers = [h for h in logging.getLogger("specchat").handlers if getattr(h, "specchat", False)]
    assert len(handlers) == 1
    assert (tmp_path / "b" / "specchat.log").read_text().count("once") == 1
    assert "once" not in (tmp_path / "a" / "specchat.log").read_text()


def test_an_unwritable_log_folder_means_no_file_log_and_no_crash(tmp_path):
    (tmp_path / "logs").write_text("a file where the log folder should be")
    assert setup_logging(AppPaths.under(tmp_path).log_file) is None
    assert log_path() is None and details_note() == ""
    logging.getLogger("specchat").error("goes nowhere, raises nothing")


LIBRARY_WARNING = """
import sys
from pathlib import Path
from specchat.logs import setup_logging
setup_logging(Path(sys.argv[1]))
import transformers  # imported after the log is set up, as a model load does
from transformers.utils import logging as hf_logging
hf_logging.get_logger("transformers.tokenization_utils_tokenizers").warning("an incorrect regex pattern")
"""


@pytest.mark.parametrize("asked", [False, True], ids=["to-the-log", "asked-on-the-terminal"])
def test_third_party_warnings_go_to_the_log_not_the_terminal_unless_asked(tmp_path, asked):
    import os
    import subprocess
    import sys

    log = tmp_path / "specchat.log"
    env = {k: v for k, v in os.environ.items() if k not in ("SPECCHAT_LIBRARY_LOGS", "TRANSFORMERS_VERBOSITY")}
    if asked:
        env["SPECCHAT_LIBRARY_LOGS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", LIBRARY_WARNING, str(log)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    written = log.read_text() if log.exists() else ""
    if asked:
        assert "an incorrect regex pattern" in proc.stderr and "an incorrect regex pattern" not in written
    else:
        assert "an incorrect regex pattern" not in proc.stderr and "transformers" not in proc.stderr, proc.stderr
        assert (
            "WARNING transformers.tokenization_utils_tokenizers" in written and "an incorrect regex pattern" in written
        )
