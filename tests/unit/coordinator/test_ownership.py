"""The ownership table of `wirebroker.coordinator.ownership`: every row and column of its
docstring."""

from __future__ import annotations

from wirebroker.coordinator.ownership import Ownership, PartitionState

NOT_OWNED, LOADING, LOADED = PartitionState.NOT_OWNED, PartitionState.LOADING, PartitionState.LOADED


def test_not_owned_becomes_loading_with_a_new_token() -> None:
    o = Ownership()
    assert o.state(3) is NOT_OWNED and o.token(3) is None and o.epoch(3) is None
    token = o.became_leader(3, 5)
    assert token is not None
    assert (o.state(3), o.token(3), o.epoch(3)) == (LOADING, token, 5)
    assert o.is_current_load(3, token)
    assert o.owned() == [3]


def test_a_load_that_finishes_makes_the_partition_loaded() -> None:
    o = Ownership()
    token = o.became_leader(0, 1)
    assert token is not None
    assert o.finish_load(0, token)
    assert o.state(0) is LOADED
    assert not o.is_current_load(0, token)  # loaded: no load is current any more
    assert not o.finish_load(0, token)  # nothing changes twice


def test_repeated_and_higher_epochs_while_owned_start_no_load() -> None:
    o = Ownership()
    token = o.became_leader(0, 1)
    assert token is not None
    assert o.became_leader(0, 1) is None  # duplicate
    assert o.became_leader(0, 2) is None  # still the leader: the load goes on
    assert (o.state(0), o.token(0), o.epoch(0)) == (LOADING, token, 2)
    assert o.finish_load(0, token)
    assert o.became_leader(0, 7) is None  # loaded: nothing reloads, the epoch is recorded
    assert (o.state(0), o.token(0), o.epoch(0)) == (LOADED, token, 7)


def test_stale_elections_are_ignored_even_after_a_resignation() -> None:
    o = Ownership()
    assert o.became_leader(0, 4) is not None
    assert o.became_leader(0, 3) is None
    assert o.epoch(0) == 4
    assert o.resigned(0, 5)
    assert o.became_leader(0, 4) is None  # older than the epoch the resignation brought
    assert o.state(0) is NOT_OWNED
    assert o.became_leader(0, 5) is not None  # equal: Kafka's maybeUpdateCoordinatorEpoch


def test_resignation_unloads_unless_stale() -> None:
    o = Ownership()
    assert not o.resigned(0)  # not owned: nothing to unload
    assert o.became_leader(0, 3) is not None
    assert not o.resigned(0, 2)  # stale: still owned
    assert o.state(0) is LOADING
    assert o.resigned(0, 3)
    assert o.state(0) is NOT_OWNED and o.epoch(0) == 3
    assert o.became_leader(0, 4) is not None
    assert o.resigned(0)  # no epoch: always applies
    assert o.state(0) is NOT_OWNED


def test_a_load_overtaken_by_resignation_and_reelection_is_stale() -> None:
    o = Ownership()
    first = o.became_leader(0, 1)
    assert first is not None
    assert o.resigned(0, 2)
    assert not o.is_current_load(0, first)
    second = o.became_leader(0, 3)
    assert second is not None and second != first
    assert not o.is_current_load(0, first)
    assert not o.finish_load(0, first)  # the stale load installs nothing
    assert o.state(0) is LOADING
    assert o.finish_load(0, second)
    assert o.state(0) is LOADED


def test_drop_and_drop_all() -> None:
    o = Ownership()
    for p in (2, 0, 1):
        assert o.became_leader(p, 0) is not None
    o.drop(1)
    assert o.state(1) is NOT_OWNED
    assert o.became_leader(1, 0) is not None  # a failed load: the same epoch loads again
    assert o.drop_all() == [0, 1, 2]
    assert o.owned() == []


def test_the_elected_epoch_stays_while_later_epochs_are_recorded() -> None:
    o = Ownership()
    token = o.became_leader(0, 4)
    assert token is not None
    assert o.became_leader(0, 6) is None  # still the leader: no reload
    owned = o.get(0)
    assert owned is not None and (owned.epoch, owned.elected_epoch) == (6, 4)
    assert o.finish_load(0, token)
    owned = o.get(0)
    assert owned is not None and (owned.state, owned.epoch, owned.elected_epoch) == (LOADED, 6, 4)
    assert o.resigned(0, 7)
    assert o.became_leader(0, 8) is not None
    owned = o.get(0)
    assert owned is not None and owned.elected_epoch == 8
