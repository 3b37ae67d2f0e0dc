package sched

// The Kubernetes objects an export writes, as small types of their own that hold only the
// fields it sets. Their JSON names are the API's (batch/v1 Job, v1 ConfigMap), and a field is
// left out when empty as the API's own types leave it out; the tests of the k8scheck module
// decode the written manifests strictly into the official types, which refuse any field they do
// not know.

// typeMeta says which kind of object a document is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// objectMeta is an object's metadata, and a pod template's.
type objectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// configMap is a v1 ConfigMap.
type configMap struct {
	typeMeta
	Metadata objectMeta        `json:"metadata"`
	Data     map[string]string `json:"data,omitempty"`
}

// job is a batch/v1 Job.
type job struct {
	typeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     jobSpec    `json:"spec"`
}

// jobSpec is a Job's spec. The counts are pointers because 0 is a setting (backoffLimit: 0)
// that must be written.
type jobSpec struct {
	Parallelism          *int              `json:"parallelism,omitempty"`
	Completions          *int              `json:"completions,omitempty"`
	PodFailurePolicy     *podFailurePolicy `json:"podFailurePolicy,omitempty"`
	BackoffLimit         *int              `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex *int              `json:"backoffLimitPerIndex,omitempty"`
	Template             podTemplate       `json:"template"`
	CompletionMode       string            `json:"completionMode,omitempty"`
	Suspend              bool              `json:"suspend,omitempty"`
}

// podFailurePolicy says what a failed pod of a Job means, by the first rule it matches.
type podFailurePolicy struct {
	Rules []podFailureRule `json:"rules"`
}

// podFailureRule is one rule of a podFailurePolicy: an action, and either exit codes or pod
// conditions to match.
type podFailureRule struct {
	Action          string            `json:"action"`
	OnExitCodes     *onExitCodes      `json:"onExitCodes,omitempty"`
	OnPodConditions []onPodConditions `json:"onPodConditions,omitempty"`
}

// onExitCodes matches a container's exit codes.
type onExitCodes struct {
	ContainerName string `json:"containerName,omitempty"`
	Operator      string `json:"operator"`
	Values        []int  `json:"values"`
}

// onPodConditions matches a condition of the pod.
type onPodConditions struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// podTemplate is the template of a Job's pods.
type podTemplate struct {
	Metadata objectMeta `json:"metadata,omitzero"`
	Spec     podSpec    `json:"spec"`
}

// podSpec is a pod's spec.
type podSpec struct {
	Volumes       []volume          `json:"volumes,omitempty"`
	Containers    []container       `json:"containers"`
	RestartPolicy string            `json:"restartPolicy,omitempty"`
	NodeSelector  map[string]string `json:"nodeSelector,omitempty"`
}

// container is one container of a pod.
type container struct {
	Name         string        `json:"name"`
	Image        string        `json:"image,omitempty"`
	Command      []string      `json:"command,omitempty"`
	Env          []envVar      `json:"env,omitempty"`
	Resources    resources     `json:"resources,omitzero"`
	VolumeMounts []volumeMount `json:"volumeMounts,omitempty"`
}

// envVar is one environment variable of a container.
type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// resources are a container's resource limits, by resource name. A quantity is a string ("1"),
// as the API writes it.
type resources struct {
	Limits map[string]string `json:"limits,omitempty"`
}

// volumeMount mounts a pod's volume in a container.
type volumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}

// volume is a pod's volume and its one source; the API writes the source's field beside the
// name.
type volume struct {
	Name                  string                 `json:"name"`
	PersistentVolumeClaim *claimVolumeSource     `json:"persistentVolumeClaim,omitempty"`
	ConfigMap             *configMapVolumeSource `json:"configMap,omitempty"`
}

// claimVolumeSource is a volume backed by a PersistentVolumeClaim.
type claimVolumeSource struct {
	ClaimName string `json:"claimName"`
}

// configMapVolumeSource is a volume that holds a ConfigMap's keys as files.
type configMapVolumeSource struct {
	Name string `json:"name,omitempty"`
}
