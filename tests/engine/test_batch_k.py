"""BatchK: one K per batched round from round times per batch size and each row's acceptance."""

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


def test_each_batch_size_has_its_own_costs():
    controller = BatchK(k_max=4)
    run(controller, [0.7], lambda k: 1.0 + 0.1 * k)  # one row: speculation pays
    alone = controller.choose([0.7])
    run(controller, [0.7] * 8, lambda k: 1.0 if k == 0 else 3.0 + 0.5 * k)  # eight: it does not
    assert alone >= 2
    assert controller.choose([0.7]) >= 2
    assert controller.choose([0.7] * 8) == 0 or controller.rounds % 8 == 0


def test_row_acceptance_follows_its_rounds():
    row = RowAcceptance()
    for _ in range(20):
        row.observe(4, 4)
    high = row.rate
    for _ in range(20):
        row.observe(4, 0)
    assert high > 0.9 and row.rate < 0.1
