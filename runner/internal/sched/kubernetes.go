package sched

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
const maxNameLen = dns1123LabelMaxLength - len("-merge")

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
	k.Parallelism = cmp.Or(k.Parallelism, k.Shards)
	k.GPUResource = cmp.Or(k.GPUResource, DefaultGPUResource)
	k.ResultsClaim = cmp.Or(k.ResultsClaim, DefaultResultsClaim)
	k.ResultsMount = cmp.Or(k.ResultsMount, DefaultResultsMount)
	k.Name = cmp.Or(k.Name, DefaultName(k.Experiment.Name))
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
	list = append(list, checkCommon(k.Experiment, k.Command)...)
	list = append(list, checkShards(k.Shards))
	if k.Shards >= 1 && (k.Parallelism < 1 || k.Parallelism > k.Shards) {
		list = append(list, fmt.Errorf("--parallelism must be between 1 and --shards (%d), got %d", k.Shards, k.Parallelism))
	}
	if k.Image == "" {
		list = append(list, fmt.Errorf("--image is required: the container image that holds runner, a shell and the engine"))
	} else {
		list = append(list, checkWord("--image", k.Image))
	}
	add("--gpu-resource "+k.GPUResource, QualifiedNameProblems(k.GPUResource))
	for _, key := range slices.Sorted(maps.Keys(k.NodeSelector)) {
		v := k.NodeSelector[key]
		add("--node-selector "+key+"="+v, QualifiedNameProblems(key))
		add("--node-selector "+key+"="+v, LabelValueProblems(v))
	}
	add("--results-claim "+k.ResultsClaim, DNSSubdomainProblems(k.ResultsClaim))
	if !path.IsAbs(k.ResultsMount) || path.Clean(k.ResultsMount) == "/" {
		list = append(list, fmt.Errorf("--results %q: want an absolute path below /", k.ResultsMount))
	} else {
		list = append(list, checkPath("--results", k.ResultsMount))
	}
	add("--name "+k.Name, DNSLabelProblems(k.Name))
	if len(k.Name) > maxNameLen {
		list = append(list, fmt.Errorf("--name %s: at most %d characters, so that %s-merge is a valid name", k.Name, maxNameLen, k.Name))
	}
	if k.Namespace != "" {
		add("--namespace "+k.Namespace, DNSLabelProblems(k.Namespace))
	}
	key := filepath.Base(k.Experiment.Path)
	add("experiment file name "+key, ConfigMapKeyProblems(key))
	if n := len(k.Experiment.Source); n > maxConfigMapBytes-1024 {
		list = append(list, fmt.Errorf("%s: %d bytes do not fit in a ConfigMap (1 MiB)", k.Experiment.Path, n))
	}
	return errs(list...)
}

// objects returns the ConfigMap holding the experiment file, the shard Job and the merge Job.
func (k Kubernetes) objects() (*configMap, *job, *job, error) {
	if err := k.Check(); err != nil {
		return nil, nil, nil, err
	}
	k = k.withDefaults()
	key := filepath.Base(k.Experiment.Path)
	file := path.Join(experimentMount, key)
	root := path.Join(k.ResultsMount, k.Name)

	cm := &configMap{
		typeMeta: typeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		Metadata: k.meta(k.Name + "-experiment"),
		Data:     map[string]string{key: string(k.Experiment.Source)},
	}

	resultsVolume := volume{Name: "results", PersistentVolumeClaim: &claimVolumeSource{ClaimName: k.ResultsClaim}}
	resultsMount := volumeMount{Name: "results", MountPath: k.ResultsMount}

	shards := &job{
		typeMeta: typeMeta{APIVersion: "batch/v1", Kind: "Job"},
		Metadata: k.meta(k.Name),
		Spec: jobSpec{
			CompletionMode:       "Indexed",
			Completions:          ptr(k.Shards),
			Parallelism:          ptr(k.Parallelism),
			BackoffLimitPerIndex: ptr(1),
			PodFailurePolicy: &podFailurePolicy{Rules: []podFailureRule{
				{
					// Exit 1 (requests failed, a server did not boot) and 2 (a bad
					// experiment) are the run's own verdict, written in its folder: another
					// attempt would not change it.
					Action:      "FailIndex",
					OnExitCodes: &onExitCodes{ContainerName: "runner", Operator: "In", Values: []int{1, 2}},
				},
				{
					// A pod evicted or preempted is retried without using up the index's
					// retry, and the retry resumes its folder.
					Action:          "Ignore",
					OnPodConditions: []onPodConditions{{Type: "DisruptionTarget", Status: "True"}},
				},
			}},
			Template: podTemplate{
				Metadata: objectMeta{Labels: k.labels()},
				Spec: podSpec{
					RestartPolicy: "Never",
					NodeSelector:  k.NodeSelector,
					Containers: []container{{
						Name:  "runner",
						Image: k.Image,
						// exec in the script hands the shell's place to runner, so the
						// SIGTERM of a deleted pod reaches it and it marks its folder
						// interrupted.
						Command:   []string{"sh", "-c", shardScript("runner", file, root, "JOB_COMPLETION_INDEX", k.Experiment.Name)},
						Env:       []envVar{{Name: ShardsEnv, Value: strconv.Itoa(k.Shards)}},
						Resources: resources{Limits: map[string]string{k.GPUResource: "1"}},
						VolumeMounts: []volumeMount{
							resultsMount,
							{Name: "experiment", MountPath: experimentMount, ReadOnly: true},
						},
					}},
					Volumes: []volume{
						resultsVolume,
						{Name: "experiment", ConfigMap: &configMapVolumeSource{Name: cm.Metadata.Name}},
					},
				},
			},
		},
	}

	merge := &job{
		typeMeta: typeMeta{APIVersion: "batch/v1", Kind: "Job"},
		Metadata: k.meta(k.Name + "-merge"),
		Spec: jobSpec{
			Suspend:      true,
			Completions:  ptr(1),
			Parallelism:  ptr(1),
			BackoffLimit: ptr(0),
			Template: podTemplate{
				Metadata: objectMeta{Labels: k.labels()},
				Spec: podSpec{
					RestartPolicy: "Never",
					Containers: []container{{
						Name:         "merge",
						Image:        k.Image,
						Command:      []string{"sh", "-c", mergeScript("runner", root, k.Experiment.Name)},
						VolumeMounts: []volumeMount{resultsMount},
					}},
					Volumes: []volume{resultsVolume},
				},
			},
		},
	}
	return cm, shards, merge, nil
}

// meta returns the metadata of one of the objects.
func (k Kubernetes) meta(name string) objectMeta {
	return objectMeta{Name: name, Namespace: k.Namespace, Labels: k.labels()}
}

// labels returns the labels of every object and pod, by which kubectl finds them together.
func (k Kubernetes) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "runner", "app.kubernetes.io/instance": k.Name}
}

// Write writes the three objects as one YAML stream, shard Job first, each under a comment that
// says what it is for and how it is applied.
func (k Kubernetes) Write(w io.Writer) error {
	cm, shards, merge, err := k.objects()
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
`, ns, shards.Metadata.Name, ns, merge.Metadata.Name, path.Join(root, "merged"))
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

// writeDoc writes one object as a YAML document: its JSON fields, keys sorted, as the API's
// own types would write it.
func writeDoc(b *strings.Builder, obj any) error {
	y, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("kubernetes manifest: %w", err)
	}
	b.Write(y)
	return nil
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
