"""When a conversation was last used, in words: its sidebar group and its short time label.
Plain Python (no Qt)."""

from __future__ import annotations

from datetime import datetime, timedelta

TODAY, YESTERDAY, WEEK, EARLIER = "Today", "Yesterday", "Previous 7 days", "Earlier"


def day_group(timestamp: float, now: datetime | None = None) -> str:
    """'Today', 'Yesterday', 'Previous 7 days' or 'Earlier', by the local calendar day."""
    today = (now or datetime.now()).date()
    day = datetime.fromtimestamp(timestamp).date()
    if day >= today:
        return TODAY
    if day == today - timedelta(days=1):
        return YESTERDAY
    if day > today - timedelta(days=7):
        return WEEK
    return EARLIER


def when_label(timestamp: float, now: datetime | None = None) -> str:
    """'14:05' today, 'Yesterday' or a weekday within the week, '3 Nov' this year, else '3 Nov 2025'."""
    moment = datetime.fromtimestamp(timestamp)
    group = day_group(timestamp, now)
    if group == TODAY:
        return moment.strftime("%H:%M")
    if group == YESTERDAY:
        return YESTERDAY
    if group == WEEK:
        return moment.strftime("%a")
    this_year = (now or datetime.now()).year == moment.year
    return f"{moment.day} {moment.strftime('%b')}" + ("" if this_year else f" {moment.year}")


def full_label(timestamp: float) -> str:
    """'Mon 30 Nov 2026, 14:05': the exact time, for tooltips."""
    moment = datetime.fromtimestamp(timestamp)
    return f"{moment.strftime('%a')} {moment.day} {moment.strftime('%b %Y, %H:%M')}"
