from tests.kube.realapi import real, real_api  # noqa: F401  (fixtures: a real kube-apiserver)
