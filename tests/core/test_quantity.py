from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as kube_parse

from central.errors import InputError
from central.resources.quantity import parse_quantity
from central.resources.vectors import Dimensions, format_value, less_equal, less_equal_on, parse_resource_list


@pytest.mark.parametrize("text, value", [
    pytest.param("500m", Decimal("0.5"), id="milli"),
    pytest.param("2", Decimal(2), id="plain"),
    pytest.param("1Gi", Decimal(2**30), id="binary"),
    pytest.param("1G", Decimal(10**9), id="decimal-si"),
    pytest.param("1e3", Decimal(1000), id="exponent"),
    pytest.param("1.5Ki", Decimal(1536), id="fraction-binary"),
    pytest.param(".5", Decimal("0.5"), id="leading-dot"),
    pytest.param(3, Decimal(3), id="yaml-int"),
    pytest.param(2.5, Decimal("2.5"), id="yaml-float"),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "1Gib", "--1", True, None, [1]])
def test_invalid_quantities_are_refused(bad):
    with pytest.raises(InputError, match="invalid quantity"):
        parse_quantity(bad)


number = st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False)
suffix = st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "E-2", "u", "n"])


@settings(max_examples=300, deadline=None)
@given(number, suffix)
def test_same_value_as_the_kubernetes_client(value, unit):
    text = f"{value}{unit}"
    assert parse_quantity(text) == kube_parse(text)


def test_resource_list_units_and_field_errors():
    parsed = parse_resource_list({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1, "ephemeral-storage": "1Gi"}, "requests")
    assert parsed == {"cpu": 500.0, "memory": float(2**30), "nvidia.com/gpu": 1000.0}
    with pytest.raises(InputError) as err:
        parse_resource_list({"cpu": "lots"}, "spec.containers[0].resources.requests")
    assert err.value.where == "spec.containers[0].resources.requests.cpu"
    with pytest.raises(InputError, match="must not be negative"):
        parse_resource_list({"memory": "-1Gi"}, "requests")


def test_resource_lists_parsed_again_give_the_same_figures_and_the_same_refusals():
    """Entries are remembered by their text: a second pod with the same quantities, under
    another field path, reads the same values, and a bad text is refused each time it comes."""
    raw = {"cpu": "250m", "memory": "3Gi", "ephemeral-storage": "1Gi", "example.com/foo": "2"}
    first = parse_resource_list(raw, "a")
    assert parse_resource_list(dict(raw), "b") == first == {"cpu": 250.0, "memory": 3.0 * 2**30, "example.com/foo": 2000.0}
    for where in ("first", "second"):
        with pytest.raises(InputError) as err:
            parse_resource_list({"cpu": "-250m"}, where)
        assert err.value.where == f"{where}.cpu"
    for i in range(5000):  # more distinct texts than it remembers: still parsed right
        assert parse_resource_list({"cpu": f"{i}m"}, "c") == {"cpu": float(i)}


vectors = st.lists(st.floats(min_value=0, max_value=1e12, allow_nan=False), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(vectors, vectors, vectors)
def test_less_equal_is_a_partial_order(a, b, c):
    dims = Dimensions(["nvidia.com/gpu"])
    va, vb, vc = (dims.vector(dict(zip(dims.names, x))) for x in (a, b, c))
    assert less_equal(va, va)
    if less_equal(va, vb) and less_equal(vb, vc):
        assert less_equal(va, vc + 0.1)  # transitive up to the tolerance
    assert less_equal(va, va + vb)
    assert less_equal_on(va, va + vb, vc)


def test_missing_dimension_is_zero_and_tolerance_applies():
    dims = Dimensions(["nvidia.com/gpu"])
    req = dims.vector({"cpu": 1000.0})
    assert less_equal(req, dims.vector({"cpu": 1000.05}))
    assert less_equal(req, dims.vector({"cpu": 999.95}))  # within 0.1 millicore
    assert not less_equal(dims.vector({"nvidia.com/gpu": 1000.0}), dims.vector({"cpu": 4000.0}))


def test_large_values_print_without_an_exponent() -> None:
    from central.resources.vectors import format_value

    assert (format_value("cpu", 8221750.0), format_value("memory", 2**40 + 1)) == ("8221750m", "1099511627777")


@given(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(min_value=0, max_value=10**13))
def test_formatted_values_parse_back_exactly(name, value):
    """A status the scheduler writes (a queue's allocated 4,244.75 CPUs, say) is a quantity the
    API and the scheduler itself parse again, to the same value."""
    text = format_value(name, float(value))
    assert parse_resource_list({name: text}, "allocated")[name] == value
