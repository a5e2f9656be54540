"""A real local Kubernetes control plane for `caldera up` and the end-to-end suite.

kube-apiserver, kube-controller-manager and etcd are built from Go modules (`build`), started
on loopback with TLS, RBAC and Node authorisation (`cluster`), Caldera is installed into it
from `daemonset/` (`install`), and simulated nodes stand in for kubelets (`simkubelet`).
Nothing here is imported by the scheduling core.
"""
