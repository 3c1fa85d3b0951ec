"""Graph and Workload survive a JSON round trip unchanged, and the text is deterministic."""

from __future__ import annotations

import json

import pytest

from pimsolve.api import inspect_model
from pimsolve.ir import Graph, Workload
from pimsolve.ir.serialize import from_json, to_json


@pytest.mark.parametrize("model", ["resnet18-28", "vit-small"])
def test_round_trip(model: str) -> None:
    result = inspect_model(model, target="isaac")
    for obj, cls in ((result.graph, Graph), (result.workload, Workload)):
        text = to_json(obj)
        back = from_json(cls, text)
        assert back == obj
        assert to_json(back) == text
    assert [layer.attributes for layer in from_json(Graph, to_json(result.graph)).layers] == [
        layer.attributes for layer in result.graph.layers]


def test_json_is_plain_and_sorted() -> None:
    graph = inspect_model("vgg8-28").graph
    data = json.loads(to_json(graph))
    assert list(data) == sorted(data)
    assert data["layers"][0]["kind"] == "conv"
    assert data["layers"][0]["mvm"]["kernel"] == [3, 3]


def test_graph_dag_edges_carry_tensors() -> None:
    graph = inspect_model("resnet18-28").graph
    dag = graph.dag
    assert dag.number_of_nodes() == len(graph.layers)
    import networkx as nx

    assert nx.is_directed_acyclic_graph(dag)
    residual_adds = [n for n in dag if graph.layer(n).op == "Add"]
    assert residual_adds and all(dag.in_degree(n) == 2 for n in residual_adds)
