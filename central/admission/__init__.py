"""Admission for Volcano Jobs, Queues and PodGroups as pure functions: defaulting, then validation.

Used by the HTTPS admission webhook, `caldera validate` and the simulator alike, so a bad
object is refused the same way everywhere. Every problem comes back, each as
"<field.path>: <message>" (e.g. `spec.tasks[1].name: duplicate task name 'worker'`).

    review.admit(obj, cluster, config, old=None) -> Review(allowed, errors, object)
    review.admit_delete(obj, cluster) -> Review
    review.json_patch(before, after) -> list[dict]     the mutating webhook's patch
    cluster.Cluster.from_objects(objects)              queues / PodGroups / namespaces to decide against
    config.AdmissionConfig                             operator limits (max tasks / replicas, queue depth)

Per kind: jobs.mutate_job / validate_job, queues.mutate_queue / validate_queue /
validate_queue_delete, podgroups.mutate_podgroup / validate_podgroup / validate_pod.
"""

from central.admission.cluster import Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.review import Review, admit, admit_delete, json_patch

__all__ = ["AdmissionConfig", "Cluster", "DEFAULT_CONFIG", "Review", "admit", "admit_delete", "json_patch"]
