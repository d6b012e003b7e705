"""The preferences' settings: defaults, round trip, and one-line errors for bad values."""

import pytest

from specchat.paths import AppPaths
from specchat.settings import Settings, load_settings, save_settings, settings_from_dict
from specchat.settings_checks import DASHBOARD_CHARTS, SettingsError


def test_defaults_follow_the_system_and_show_every_chart():
    s = Settings()
    assert (s.enter_sends, s.theme, s.power_policy, s.data_dir) == (True, "system", "warn", None)
    assert s.dashboard_charts == list(DASHBOARD_CHARTS)


def test_preferences_round_trip(tmp_path):
    paths = AppPaths.under(tmp_path).ensure()
    save_settings(
        paths,
        Settings(
            enter_sends=False,
            theme="dark",
            power_policy="plain_on_battery",
            dashboard_charts=["memory"],
            data_dir=str(tmp_path / "data2"),
        ),
    )
    s = load_settings(paths).settings
    assert (s.enter_sends, s.theme, s.power_policy, s.dashboard_charts, s.data_dir) == (
        False,
        "dark",
        "plain_on_battery",
        ["memory"],
        str(tmp_path / "data2"),
    )


@pytest.mark.parametrize(
    "data, words",
    [
        ({"theme": "blue"}, "theme must be one of system, light, dark, got 'blue'"),
        ({"power_policy": "never"}, "power_policy must be one of ignore, warn, plain_on_battery, got 'never'"),
        ({"dashboard_charts": ["memory", "speedometer"]}, "dashboard_charts may hold only"),
        ({"enter_sends": "yes"}, "enter_sends must be true or false, got 'yes'"),
        ({"data_dir": 3}, "data_dir must be text or null, got 3"),
    ],
)
def test_bad_preference_values_are_named(data, words):
    with pytest.raises(SettingsError, match=words.replace("(", r"\(")):
        settings_from_dict(data)
