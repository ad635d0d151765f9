"""Buffer specs and ops of icnd.mpi, as mpi4py reads them (icnd/mpi/buffers.py, ops.py)."""

from __future__ import annotations

import array
import mmap

import numpy as np
import pytest

from icnd.mpi import MPI
from icnd.mpi.buffers import message
from icnd.mpi.ops import as_op, fold


def test_a_bare_buffer_brings_its_own_type_and_count() -> None:
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    m = message(x, where="t")
    assert (m.dtype, m.count, m.blocks) == (np.dtype(np.int16), 6, 1)
    assert np.shares_memory(m.array, x) and m.array.tolist() == list(range(6))
    assert message(bytearray(b"abc"), where="t").array.tolist() == [97, 98, 99]
    assert message(array.array("d", [1.5, 2.5]), where="t").array.tolist() == [1.5, 2.5]
    assert message(np.float64(3.0), where="t").array.tolist() == [3.0]  # a numpy scalar is a buffer too


def test_a_datatype_reinterprets_the_bytes_as_mpi_does() -> None:
    n = np.array(7, dtype=np.int64)  # mpi4py's cpi demo: Bcast([n, MPI.INT]) of a C long
    m = message([n, MPI.INT], where="t")
    assert (m.dtype, m.count) == (np.dtype(np.intc), 2)
    assert m.array.view(np.int64).tolist() == [7]
    f = np.arange(4, dtype=np.float32)
    assert message([f, MPI.DOUBLE], where="t").count == 2
    assert message([f, MPI.BYTE], where="t").count == 16
    assert message([bytearray(8), MPI.LONG], where="t").dtype == np.dtype("l")
    assert (MPI.INT.Get_size(), MPI.LONG.size, MPI.FLOAT.size, MPI.DOUBLE.size, MPI.BYTE.size) == (4, 8, 4, 8, 1)


def test_counts_and_displacements() -> None:
    x = np.arange(10.0)
    assert message([x, 3, MPI.DOUBLE], where="t").array.tolist() == [0.0, 1.0, 2.0]
    assert message([x, (3, 2), MPI.DOUBLE], where="t").array.tolist() == [2.0, 3.0, 4.0]
    assert message([x, 3, 4, MPI.DOUBLE], where="t").array.tolist() == [4.0, 5.0, 6.0]
    assert message([x, 4], where="t").array.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert message([x, (0, 8)], where="t").count == 0
    # per block: a receive buffer of Gather holds one block of `count` per rank
    g = message([x, 2, MPI.DOUBLE], where="t", blocks=3)
    assert (g.count, g.array.size, g.block(2).tolist()) == (2, 6, [4.0, 5.0])
    assert message(x, where="t", blocks=5).count == 2


def test_any_buffer_protocol_object_receives_in_place() -> None:
    mm = mmap.mmap(-1, 16)
    m = message([mm, MPI.DOUBLE], where="t", writable=True)
    m.array[:] = [1.0, 2.0]
    del m  # (the views export the mapping: it closes once they are gone)
    assert mm[:16] == np.array([1.0, 2.0]).tobytes()
    mm.close()
    ba = bytearray(4)
    message(ba, where="t", writable=True).array[:] = [1, 2, 3, 4]
    assert ba == bytearray(b"\x01\x02\x03\x04")
    fortran = np.asfortranarray(np.zeros((2, 2)))  # contiguous in Fortran order: elements in memory order
    message(fortran, where="t", writable=True).array[:] = [1, 2, 3, 4]
    assert fortran.tolist() == [[1, 3], [2, 4]]


@pytest.mark.parametrize("spec, error, words", [
    ([np.zeros(3), 4, MPI.DOUBLE], ValueError, "need 32 bytes, the buffer has 24"),
    ([np.zeros(3, np.uint8), MPI.INT], ValueError, "not a whole number"),
    ([np.zeros(3), -1, MPI.DOUBLE], ValueError, "negative count"),
    ([np.zeros(3), (1, 9), MPI.DOUBLE], ValueError, "displacement 9"),
    ([np.zeros(3), 1, "d"], TypeError, "datatype must be one of"),
    ([np.zeros(3), 1, 2, 3, 4], ValueError, "2 to 4 items"),
    ([np.zeros(3), 1.5, MPI.DOUBLE], TypeError, "count must be an integer"),
    ("text", TypeError, "expected a buffer"),
    (None, TypeError, "expected a buffer"),
    (np.zeros((4, 4))[:, 1], BufferError, "not contiguous"),
])
def test_bad_specs_are_refused_with_what_is_wrong(spec: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words) as info:
        message(spec, where="Allreduce sendbuf")
    assert str(info.value).startswith("Allreduce sendbuf: ")


def test_a_receive_buffer_must_be_writable_and_split_evenly() -> None:
    with pytest.raises(BufferError, match="read-only"):
        message(b"abcd", where="Bcast buf", writable=True)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(BufferError, match="read-only"):
        message(frozen, where="t", writable=True)
    with pytest.raises(ValueError, match="7 elements cannot be split into 2 equal blocks"):
        message(np.zeros(7), where="Gather recvbuf", blocks=2)


def test_ops_map_to_the_communicator_and_compute_like_mpi4py() -> None:
    assert [op.net for op in (MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN)] == ["sum", "prod", "max", "min"]
    assert (MPI.SUM(2, 3), MPI.PROD(2, 3), MPI.MAX(2, 3), MPI.MIN(2, 3)) == (5, 6, 3, 2)
    assert MPI.SUM([1], [2]) == [1, 2] and MPI.MAX("a", "b") == "b"
    assert fold([[0], [1], [2]], MPI.SUM) == [0, 1, 2]  # rank order
    assert as_op(MPI.SUM, "reduce") is MPI.SUM
    assert as_op(max, "reduce", callables=True) is max
    with pytest.raises(ValueError, match="reduce: unknown op 'sum'"):
        as_op("sum", "reduce")
    with pytest.raises(ValueError, match="unknown op"):
        as_op(max, "Allreduce")  # the buffer forms take predefined ops only


def test_in_place_and_reprs() -> None:
    assert repr(MPI.IN_PLACE) == "MPI.IN_PLACE" and repr(MPI.DOUBLE) == "MPI.DOUBLE" and repr(MPI.SUM) == "MPI.SUM"
    assert type(MPI.IN_PLACE)() is MPI.IN_PLACE
