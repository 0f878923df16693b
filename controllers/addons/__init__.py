"""The local-cluster add-ons (docs/pod-level-add-ons.md), each a shell around a pure engine in
`placement/pods/` and plugins in `plugins/pods/`: the spot/on-demand webhook server, the pod
scheduler loop, the PodGroup and ElasticQuota status controllers. They build on `runtime/` and
`kube/` and never import `hub/`."""

__all__: list[str] = []
