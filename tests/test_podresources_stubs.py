"""The committed PodResources stubs are what grpcio-tools generates from the committed proto."""
from __future__ import annotations


from numaguard.lint.node import generate_stubs


def test_generated_stubs_are_up_to_date(tmp_path):
    written = generate_stubs.generate(tmp_path)
    assert [p.name for p in written] == ["api_pb2.py", "api_pb2_grpc.py"]
    for path in written:
        committed = generate_stubs.HERE / path.name
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed} is stale: run python -m numaguard.lint.node.generate_stubs")


def test_service_name_is_the_kubelets():
    from numaguard.lint.node.podresources import api_pb2

    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert service.full_name == "v1.PodResourcesLister"
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]
