"""BatchK: one K per batched round from round times per batch size and each row's acceptance."""

import random

from specchat.engine.batch.batch_k import BatchK, RowAcceptance


def run(controller: BatchK, rates: list[float], cost, rounds: int = 60) -> list[int]:
    """Feed the controller rounds that cost cost(k) seconds; the Ks it chose."""
    chosen = []
    for _ in range(rounds):
        k = controller.choose(rates)
        controller.observe(len(rates), k, cost(k))
        chosen.append(k)
    return chosen


def test_where_drafting_is_dear_the_batch_decodes_plainly():
    # a plain step 1.0 s; any drafting round 2.2 s plus 0.1 s a draft: two rows at 0.6 acceptance gain nothing
    chosen = run(BatchK(k_max=4), [0.6, 0.6], lambda k: 1.0 if k == 0 else 2.2 + 0.1 * k)
    assert chosen[1] == 0  # the second round at this size measures plain decoding
    assert chosen[-20:].count(0) >= 17  # it stays plain, trying a K now and then


def test_where_drafting_is_cheap_the_batch_speculates():
    # verifying K drafts costs little more than a plain step: four rows at 0.8 acceptance draft deep
    chosen = run(BatchK(k_max=6), [0.8] * 4, lambda k: 1.0 + 0.12 * k)
    assert min(chosen[-20:]) >= 2 and max(chosen[-20:]) >= 4


def test_a_batch_drafts_no_deeper_than_its_own_k_max_whatever_its_rows_allow():
    # drafts nearly free and always accepted: the deepest K would pay, and rows allow 16 (Auto K alone)
    controller, chosen = BatchK(k_max=8), []
    for _ in range(60):
        k, _stop = controller.plan([0.99, 0.99], 16, [0.99, 0.99])
        controller.observe(2, k, 1.0 + 0.01 * k, verify_s=1.0 + 0.005 * k)
        chosen.append(k)
    assert max(chosen) == 8


def test_each_batch_size_has_its_own_costs():
    controller = BatchK(k_max=4)
    run(controller, [0.7], lambda k: 1.0 + 0.1 * k)  # one row: speculation pays
    alone = controller.choose([0.7])
    run(controller, [0.7] * 8, lambda k: 1.0 if k == 0 else 3.0 + 0.5 * k)  # eight: it does not
    assert alone >= 2
    assert controller.choose([0.7]) >= 2
    assert controller.choose([0.7] * 8) == 0 or controller.timings[8].since == 0  # 0, or a try of another K


def test_a_size_new_to_the_table_starts_plain_where_a_smaller_batch_decodes_plainly():
    dear = lambda k: 1.0 if k == 0 else 2.6 + 0.1 * k  # noqa: E731
    controller = BatchK(k_max=4)
    run(controller, [0.6] * 4, dear)  # four rows measured: drafting loses by a third
    six = run(controller, [0.6] * 6, dear, rounds=40)
    assert six[0] == 0  # six rows never ran: no drafting round is spent to measure them
    assert any(k > 0 for k in six)  # drafting is still tried there, as the batch explores
    cheap = BatchK(k_max=4)
    run(cheap, [0.8] * 4, lambda k: 1.0 + 0.05 * k)  # four rows draft
    assert cheap.choose([0.8] * 6) > 0  # a drafting round measures six rows first, as before
    close = BatchK(k_max=4)
    run(close, [0.6] * 4, lambda k: 1.0 if k == 0 else 1.55 + 0.25 * k)  # plain ahead at four rows by 5%
    assert close.choose([0.6] * 6) > 0  # within the margin: four rows' noise does not decide six
    alone = BatchK(k_max=4)
    run(alone, [0.6], dear)  # one row measured, drafting dear
    assert alone.choose([0.6] * 2) > 0  # a batch of one says nothing of two


def test_row_acceptance_follows_its_rounds():
    row = RowAcceptance()
    for _ in range(20):
        row.observe(4, 4)
    high = row.rate
    for _ in range(80):  # each round checks one draft: the first, refused
        row.observe(4, 0)
    assert high > 0.9 and row.rate < 0.1


def run_rows(controller: BatchK, alphas: list[float], cost, rounds: int, lifetime: int, seed: int = 0) -> list[int]:
    """Rows whose drafts are accepted with these probabilities, each replaced by a new row (from
    controller.new_row) every `lifetime` rounds; rounds cost cost(k) seconds. The Ks chosen."""
    rng = random.Random(seed)
    rows = [controller.new_row() for _ in alphas]
    chosen = []
    for n in range(rounds):
        if n and n % lifetime == 0:
            rows = [controller.new_row() for _ in alphas]
        k = controller.choose([r.rate for r in rows], None, [r.hopeful for r in rows])
        controller.observe(len(rows), k, cost(k))
        for row, alpha in zip(rows, alphas):
            accepted = next((i for i in range(k) if rng.random() >= alpha), k)
            controller.observe_row(row, k, accepted)
        chosen.append(k)
    return chosen


def test_rows_that_come_and_go_keep_drafting_where_the_pairs_drafts_pay():
    """Each row lives six rounds: too few to learn its own acceptance from a blind prior, and a plain round
    teaches nothing. New rows start from what the rows before them accepted, so the batch keeps drafting."""
    # a plain step 1.0 s, a drafting round 1.6 s + 0.1 s a draft: at 0.5 acceptance drafting loses, at 0.85 it
    # gains about 80%
    cost = lambda k: 1.0 if k == 0 else 1.6 + 0.1 * k  # noqa: E731
    chosen = run_rows(BatchK(k_max=6), [0.85, 0.85], cost, rounds=90, lifetime=6)
    assert sum(k >= 3 for k in chosen[-45:]) >= 36, chosen


def test_where_the_pairs_drafts_do_not_pay_rows_that_come_and_go_stay_plain():
    cost = lambda k: 1.0 if k == 0 else 1.6 + 0.1 * k  # noqa: E731
    chosen = run_rows(BatchK(k_max=6), [0.3, 0.3], cost, rounds=90, lifetime=6)
    assert chosen[-45:].count(0) >= 38, chosen


def test_a_new_row_starts_from_the_pooled_acceptance_and_its_own_history():
    controller = BatchK(k_max=4)
    for _ in range(30):
        controller.observe_row(RowAcceptance(), 4, 3)
    assert abs(controller.new_row().rate - 0.75) < 0.05
    lead = controller.new_row(accepted=4, checked=30)  # a request that ran alone, its drafts mostly missed
    assert lead.rate < 0.3
    assert RowAcceptance().hopeful > RowAcceptance().rate and lead.hopeful > lead.rate


def test_deep_rounds_read_the_acceptance_they_had():
    """Drafts after the first refused one are never checked: at K = 6 and a 0.85 acceptance, counting them as
    refusals would read about 0.6."""
    rng, row = random.Random(1), RowAcceptance()
    rates = []
    for _ in range(400):
        accepted = next((i for i in range(6) if rng.random() >= 0.85), 6)
        row.observe(6, accepted)
        rates.append(row.rate)
    assert abs(sum(rates[100:]) / len(rates[100:]) - 0.85) < 0.03


def test_tries_that_change_nothing_come_ever_more_rarely():
    """Where plain decoding wins at a size, each try of a K costs a drafting round: the gap doubles."""
    chosen = run(BatchK(k_max=4), [0.6, 0.6], lambda k: 1.0 if k == 0 else 2.2 + 0.1 * k, rounds=200)
    tries = [i for i, k in enumerate(chosen) if k and i > 2]
    assert 3 <= len(tries) <= 6, tries  # every 8 rounds would be 24
    assert all(b - a >= 8 for a, b in zip(tries, tries[1:])) and tries[-1] - tries[-2] >= 32
