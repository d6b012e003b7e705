"""The dashboard's bandwidth line: its figures come from the inputs its provider gives, the share of the
machine's bandwidth is never above 100% for consistent inputs, and the measurement is an engine job whose
result is kept per machine."""

import itertools
import re

from specchat.engine.events import Finished, GenerationStats
from specchat.engine.owner import EngineHost
from specchat.system.bandwidth import Bandwidth, load_bandwidth, save_bandwidth
from specchat.system.machine import chip_name
from specchat.ui.dashboard.bandwidth_line import (
    MEASURE,
    REMEASURE,
    BandwidthInputs,
    BandwidthLine,
    bandwidth_file,
    bandwidth_words,
)
from specchat.ui.engine_client import EngineClient

from .conftest import screenshot
from .test_dashboard import make_dashboard

GB = 10**9
MACHINE = Bandwidth("Test Chip", 100 * GB, 1_700_000_000.0)


def shown_share(text: str) -> int:
    """The percentage the line shows."""
    return int(re.search(r": (\d+)% of the ", text).group(1))


def test_the_line_says_what_the_inputs_give(qtbot, tmp_path):
    inputs = BandwidthInputs(2 * GB, 10.0, 30.0, MACHINE)  # 20 GB/s read; 50 tok/s at 100 GB/s
    line = BandwidthLine(tmp_path / "bw.json", "Test Chip", provider=lambda: inputs)
    qtbot.addWidget(line)
    line.refresh()
    assert line.label.text() == (
        "Plain decode reads 20.0 GB/s: 20% of the 100.0 GB/s measured · one-token limit 50.0 tok/s"
        " · speculation at 0.60× that limit."
    )
    inputs = BandwidthInputs(2 * GB, 10.0, None, MACHINE)
    line.refresh()
    assert line.label.text().endswith("one-token limit 50.0 tok/s.")  # no speculative reply: no multiple
    assert bandwidth_words(BandwidthInputs(2 * GB, None, None, MACHINE)) == (
        "Memory bandwidth: 100.0 GB/s measured · one-token limit 50.0 tok/s (plain not measured)."
    )
    assert bandwidth_words(BandwidthInputs(2 * GB, 10.0, 30.0, None)) == (
        "Memory bandwidth: not measured on this machine yet."
    )


def test_the_share_is_never_above_100_percent_when_the_inputs_are_consistent():
    sizes = [int(0.3 * GB), int(1.7 * GB), 8 * GB, 70 * GB]
    rates = [1e9, 37.5e9, 120e9, 800e9]
    for weight_bytes, rate in itertools.product(sizes, rates):
        limit = rate / weight_bytes  # plain decoding at the measured bandwidth
        for fraction in (0.01, 0.37, 0.9, 0.999, 1.0):
            bandwidth = Bandwidth("m", rate, 0.0)
            text = bandwidth_words(BandwidthInputs(weight_bytes, limit * fraction, limit * 2.5, bandwidth))
            assert shown_share(text) <= 100 and "more than measured" not in text
            assert shown_share(text) == round(fraction * 100)
    # inconsistent inputs (decoding faster than the copy measured) are said, not hidden
    text = bandwidth_words(BandwidthInputs(GB, 150.0, None, MACHINE))
    assert shown_share(text) == 150 and "re-measure the bandwidth" in text


def test_the_dashboard_provides_the_target_weights_plain_reference_and_last_speculative_speed(qtbot, paths, tmp_path):
    save_bandwidth(bandwidth_file(paths), Bandwidth(chip_name(), 50 * GB, 1_700_000_000.0))
    target = tmp_path / "target"
    target.mkdir()
    (target / "model.safetensors").write_bytes(b"\0" * 1_000_000)  # 1 MB of weights: the limit is 50,000 tok/s
    (target / "tokenizer.json").write_bytes(b"\0" * 5_000)  # not a weight file
    dash = make_dashboard(qtbot, paths)
    dash.show()
    assert dash.bandwidth_line.button.text() == REMEASURE  # measured before: kept per machine
    dash.set_model(str(target))
    dash.set_baseline_tps(str(target), 20_000.0)  # 20 GB/s
    dash.redraw()
    assert dash.bandwidth_inputs() == BandwidthInputs(1_000_000, 20_000.0, None, dash.bandwidth_line.bandwidth)
    assert dash.bandwidth_line.label.text() == (
        "Plain decode reads 20.0 GB/s: 40% of the 50.0 GB/s measured · one-token limit 50000.0 tok/s."
    )
    stats = GenerationStats(generated_tokens=40, decode_tokens_per_s=75_000.0, mode="draft", prompt_tokens=20)
    dash.on_event(Finished((1,) * 40, "x", stats))
    dash.redraw()
    assert dash.bandwidth_line.label.text().endswith("· speculation at 1.50× that limit.")
    screenshot(dash, "dashboard-bandwidth")


def test_the_measurement_is_an_engine_job_and_is_kept_for_the_machine(qtbot, tmp_path):
    file = tmp_path / "bandwidth.json"
    line = BandwidthLine(file, chip_name())
    qtbot.addWidget(line)
    assert line.bandwidth is None and line.button.text() == MEASURE
    host = EngineHost()
    client = EngineClient(host=host)
    line.measureRequested.connect(client.measure_bandwidth)
    client.bandwidthMeasured.connect(line.set_bandwidth)
    try:
        with qtbot.waitSignal(client.bandwidthMeasured, timeout=120_000) as measured:
            line.button.click()
            assert not line.button.isEnabled()  # one measurement at a time
    finally:
        client.shutdown()
    bandwidth = measured.args[0]
    assert bandwidth.machine == chip_name() and bandwidth.bytes_per_s > 0
    assert load_bandwidth(file, chip_name()) == bandwidth == line.bandwidth
    assert line.button.isEnabled() and line.button.text() == REMEASURE
    assert load_bandwidth(file, "Another Chip") is None  # another machine measures its own


def test_a_machine_without_a_measurement_gets_one_inside_the_plain_decode_measurement_job(qtbot, dense_target):
    from specchat.engine.owner import JobQueued, load_pair_job

    host = EngineHost()
    pair = host.submit("load", load_pair_job(dense_target)).result(120)
    queued = []
    host.add_observer(lambda event: queued.append(event.job.kind) if isinstance(event, JobQueued) else None)
    client = EngineClient(host=host)
    client.bandwidth_wanted = lambda: True
    try:
        with (
            qtbot.waitSignal(client.bandwidthMeasured, timeout=120_000) as measured,
            qtbot.waitSignal(client.baselineMeasured, timeout=300_000) as plain,
        ):
            client.measure_baseline(pair.target)
    finally:
        client.shutdown()
    assert queued == ["baseline"]  # no job of its own: the queue a user sees is unchanged
    assert measured.args[0].machine == chip_name() and measured.args[0].bytes_per_s > 0
    assert plain.args[0] == pair.target and plain.args[1] > 0


def test_slow_rates_are_said_in_megabytes():
    text = bandwidth_words(BandwidthInputs(84_000_000, 0.5, None, Bandwidth("m", 2.5e9, 0.0)))
    assert text.startswith("Plain decode reads 42 MB/s: 2% of the 2.5 GB/s measured ·")
