package sched

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Defaults of a Kubernetes export.
const (
	DefaultGPUResource  = "nvidia.com/gpu"
	DefaultResultsClaim = "runner-results"
	DefaultResultsMount = "/results"
)

// ShardsEnv is the variable the exported Job sets to the shard count: an Indexed Job gives
// each pod its index (JOB_COMPLETION_INDEX) but not the count, which `--shard auto` reads here.
const ShardsEnv = "RUNNER_SHARDS"

// experimentMount is where the pods see the ConfigMap that holds the experiment file.
const experimentMount = "/experiment"

// maxNameLen is the longest name a shard Job may have: the merge Job is the name and "-merge",
// and a Job's name is a label value, at most 63 characters.
const maxNameLen = validation.DNS1123LabelMaxLength - len("-merge")

// maxConfigMapBytes is the most a ConfigMap may hold.
const maxConfigMapBytes = 1 << 20

// Kubernetes describes the Kubernetes objects that run an experiment's shards and merge them:
// a ConfigMap holding the experiment file, an Indexed Job with one pod per shard, and a
// suspended Job that merges the shard folders once it is resumed.
type Kubernetes struct {
	Experiment   Experiment
	Shards       int               // completions: one index per shard
	Parallelism  int               // pods at once; 0 means Shards
	Image        string            // holds runner (on PATH), a shell, and the engine
	GPUResource  string            // the extended resource of one GPU; "" means DefaultGPUResource
	NodeSelector map[string]string // labels the shard pods' nodes must have
	ResultsClaim string            // a ReadWriteMany PersistentVolumeClaim; "" means DefaultResultsClaim
	ResultsMount string            // where the claim is mounted; "" means DefaultResultsMount
	Name         string            // the shard Job's name; "" means DefaultName
	Namespace    string            // "" leaves it to kubectl's context
	Command      []string          // the command line that wrote the manifests, for their header
}

// withDefaults returns k with its empty fields set to their defaults.
func (k Kubernetes) withDefaults() Kubernetes {
	if k.Parallelism == 0 {
		k.Parallelism = k.Shards
	}
	if k.GPUResource == "" {
		k.GPUResource = DefaultGPUResource
	}
	if k.ResultsClaim == "" {
		k.ResultsClaim = DefaultResultsClaim
	}
	if k.ResultsMount == "" {
		k.ResultsMount = DefaultResultsMount
	}
	if k.Name == "" {
		k.Name = DefaultName(k.Experiment.Name)
	}
	return k
}

// Check reports every setting the API server would refuse, and a missing image, naming the
// flag that set it.
func (k Kubernetes) Check() error {
	k = k.withDefaults()
	var list []error
	add := func(flag string, problems []string) {
		for _, p := range problems {
			list = append(list, fmt.Errorf("%s: %s", flag, p))
		}
	}
	list = append(list, checkShards(k.Shards))
	if k.Shards >= 1 && (k.Parallelism < 1 || k.Parallelism > k.Shards) {
		list = append(list, fmt.Errorf("--parallelism must be between 1 and --shards (%d), got %d", k.Shards, k.Parallelism))
	}
	if k.Image == "" {
		list = append(list, fmt.Errorf("--image is required: the container image that holds runner, a shell and the engine"))
	} else {
		list = append(list, checkWord("--image", k.Image))
	}
	add("--gpu-resource "+k.GPUResource, validation.IsQualifiedName(k.GPUResource))
	for _, key := range slices.Sorted(maps.Keys(k.NodeSelector)) {
		v := k.NodeSelector[key]
		add("--node-selector "+key+"="+v, validation.IsQualifiedName(key))
		add("--node-selector "+key+"="+v, validation.IsValidLabelValue(v))
	}
	add("--results-claim "+k.ResultsClaim, validation.IsDNS1123Subdomain(k.ResultsClaim))
	if !path.IsAbs(k.ResultsMount) || path.Clean(k.ResultsMount) == "/" {
		list = append(list, fmt.Errorf("--results %q: want an absolute path below /", k.ResultsMount))
	} else {
		list = append(list, checkPath("--results", k.ResultsMount))
	}
	add("--name "+k.Name, validation.IsDNS1123Label(k.Name))
	if len(k.Name) > maxNameLen {
		list = append(list, fmt.Errorf("--name %s: at most %d characters, so that %s-merge is a valid name", k.Name, maxNameLen, k.Name))
	}
	if k.Namespace != "" {
		add("--namespace "+k.Namespace, validation.IsDNS1123Label(k.Namespace))
	}
	key := filepath.Base(k.Experiment.Path)
	add("experiment file name "+key, validation.IsConfigMapKey(key))
	if n := len(k.Experiment.Source); n > maxConfigMapBytes-1024 {
		list = append(list, fmt.Errorf("%s: %d bytes do not fit in a ConfigMap (1 MiB)", k.Experiment.Path, n))
	}
	return errs(list...)
}

// Objects returns the ConfigMap holding the experiment file, the shard Job and the merge Job.
func (k Kubernetes) Objects() (*corev1.ConfigMap, *batchv1.Job, *batchv1.Job, error) {
	if err := k.Check(); err != nil {
		return nil, nil, nil, err
	}
	k = k.withDefaults()
	key := filepath.Base(k.Experiment.Path)
	file := path.Join(experimentMount, key)
	root := path.Join(k.ResultsMount, k.Name)

	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: k.meta(k.Name + "-experiment"),
		Data:       map[string]string{key: string(k.Experiment.Source)},
	}

	resultsVolume := corev1.Volume{Name: "results", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.ResultsClaim},
	}}
	resultsMount := corev1.VolumeMount{Name: "results", MountPath: k.ResultsMount}

	shards := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: k.meta(k.Name),
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr(batchv1.IndexedCompletion),
			Completions:          ptr(int32(k.Shards)),
			Parallelism:          ptr(int32(k.Parallelism)),
			BackoffLimitPerIndex: ptr(int32(1)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{
					// Exit 1 (requests failed, a server did not boot) and 2 (a bad
					// experiment) are the run's own verdict, written in its folder: another
					// attempt would not change it.
					Action: batchv1.PodFailurePolicyActionFailIndex,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr("runner"),
						Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
						Values:        []int32{1, 2},
					},
				},
				{
					// A pod evicted or preempted is retried without using up the index's
					// retry, and the retry resumes its folder.
					Action: batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
						{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
					},
				},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: k.labels()},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  k.NodeSelector,
					Containers: []corev1.Container{{
						Name:  "runner",
						Image: k.Image,
						// exec in the script hands the shell's place to runner, so the
						// SIGTERM of a deleted pod reaches it and it marks its folder
						// interrupted.
						Command: []string{"sh", "-c", shardScript("runner", file, root+"/shard-$JOB_COMPLETION_INDEX", k.Experiment.Name)},
						Env:     []corev1.EnvVar{{Name: ShardsEnv, Value: strconv.Itoa(k.Shards)}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							corev1.ResourceName(k.GPUResource): resource.MustParse("1"),
						}},
						VolumeMounts: []corev1.VolumeMount{
							resultsMount,
							{Name: "experiment", MountPath: experimentMount, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						resultsVolume,
						{Name: "experiment", VolumeSource: corev1.VolumeSource{
							ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
						}},
					},
				},
			},
		},
	}

	merge := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: k.meta(k.Name + "-merge"),
		Spec: batchv1.JobSpec{
			Suspend:      ptr(true),
			Completions:  ptr(int32(1)),
			Parallelism:  ptr(int32(1)),
			BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: k.labels()},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:         "merge",
						Image:        k.Image,
						Command:      []string{"sh", "-c", mergeScript("runner", root, k.Experiment.Name)},
						VolumeMounts: []corev1.VolumeMount{resultsMount},
					}},
					Volumes: []corev1.Volume{resultsVolume},
				},
			},
		},
	}
	return cm, shards, merge, nil
}

// meta returns the metadata of one of the objects.
func (k Kubernetes) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: k.labels()}
}

// labels returns the labels of every object and pod, by which kubectl finds them together.
func (k Kubernetes) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "runner", "app.kubernetes.io/instance": k.Name}
}

// Write writes the three objects as one YAML stream, shard Job first, each under a comment that
// says what it is for and how it is applied.
func (k Kubernetes) Write(w io.Writer) error {
	cm, shards, merge, err := k.Objects()
	if err != nil {
		return err
	}
	k = k.withDefaults()
	ns := ""
	if k.Namespace != "" {
		ns = " -n " + k.Namespace
	}
	var b strings.Builder
	root := path.Join(k.ResultsMount, k.Name)
	fmt.Fprintf(&b, `# Runs %s as %s on a Kubernetes Indexed Job,
# one GPU (%s) per pod, then merges the shard folders into one result folder.
# Printed, never applied: review it, then: kubectl apply%s -f THIS_FILE
# Needs Kubernetes 1.29 or later (backoffLimitPerIndex, podFailurePolicy FailIndex).
# The image must hold runner (on PATH), sh and the engine. The claim %s must
# exist and be ReadWriteMany: every pod writes to it. Shard INDEX writes under
# %s/shard-INDEX; to run again, delete these objects and choose
# another --name (or empty %s).
`, k.Experiment.Path, plural(k.Shards, "shard"), k.GPUResource, ns, k.ResultsClaim, root, root)
	if len(k.Command) > 0 {
		fmt.Fprintf(&b, "# Written by: %s\n", commandLine(k.Command))
	}
	fmt.Fprintf(&b, "# Experiment sha256: %s\n", k.Experiment.SHA256)
	if err := writeDoc(&b, shards); err != nil {
		return err
	}
	fmt.Fprintf(&b, `---
# The merge: one pod, no GPU, the same volume. It is created suspended, so that
# applying this file starts only the shards; once every shard has completed, start it:
#   kubectl wait%s --for=condition=complete --timeout=-1s job/%s
#   kubectl patch%s job/%s --type=merge -p '{"spec":{"suspend":false}}'
# It writes %s. If a shard fails, the Job above fails instead of
# completing: run runner merge --partial by hand to keep what the other shards measured.
`, ns, shards.Name, ns, merge.Name, path.Join(root, "merged"))
	if err := writeDoc(&b, merge); err != nil {
		return err
	}
	fmt.Fprintf(&b, `---
# The experiment file, mounted read-only at %s in the shard pods: they run
# the very bytes whose sha256 is above.
`, experimentMount)
	if err := writeDoc(&b, cm); err != nil {
		return err
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// writeDoc writes one object as a YAML document, without the fields that say nothing: the empty
// status a new object has and any other empty object.
func writeDoc(b *strings.Builder, obj any) error {
	j, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("kubernetes manifest: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return fmt.Errorf("kubernetes manifest: %w", err)
	}
	dropEmpty(m)
	y, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Errorf("kubernetes manifest: %w", err)
	}
	b.Write(y)
	return nil
}

// dropEmpty removes every key whose value is an empty object, depth first. None of the objects
// written here holds an empty object that means something (an emptyDir volume would).
func dropEmpty(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			dropEmpty(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropEmpty(em)
				}
			}
		}
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
