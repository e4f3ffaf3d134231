// Command validate checks wasmlab's Kubernetes manifests as the API server would decode them:
// every document strictly into k8s.io/api's own type for its kind (an unknown or duplicated field
// is an error), then what a load Job must be for its parts to merge (Indexed, all pods at once,
// never retried, each printing its part). It prints each Job's container command as JSON, for the
// test that runs those very arguments.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

type loadJob struct {
	Name        string            `json:"name"`
	Completions int32             `json:"completions"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate MANIFEST.yaml...")
		os.Exit(2)
	}
	var jobs []loadJob
	for _, path := range os.Args[1:] {
		found, err := validateFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		jobs = append(jobs, found...)
	}
	out, _ := json.Marshal(jobs)
	fmt.Println(string(out))
}

func validateFile(path string) ([]loadJob, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var jobs []loadJob
	for i, doc := range bytes.Split(text, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %v", i+1, err)
		}
		switch head.APIVersion + " " + head.Kind {
		case "batch/v1 Job":
			var job batchv1.Job
			if err := yaml.UnmarshalStrict(doc, &job); err != nil {
				return nil, fmt.Errorf("document %d (Job): %v", i+1, err)
			}
			lj, err := checkLoadJob(&job)
			if err != nil {
				return nil, fmt.Errorf("Job %s: %v", job.Name, err)
			}
			jobs = append(jobs, lj)
		case "v1 Service":
			var svc corev1.Service
			if err := yaml.UnmarshalStrict(doc, &svc); err != nil {
				return nil, fmt.Errorf("document %d (Service): %v", i+1, err)
			}
		default:
			return nil, fmt.Errorf("document %d: %q %q is not a kind this checker knows", i+1, head.APIVersion, head.Kind)
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("no Job in it")
	}
	return jobs, nil
}

// checkLoadJob holds a Job to what merging its pods' parts needs.
func checkLoadJob(job *batchv1.Job) (loadJob, error) {
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		return loadJob{}, fmt.Errorf("completionMode must be Indexed: each pod's index names its part")
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 1 {
		return loadJob{}, fmt.Errorf("completions and parallelism must be equal: every generator runs at the same time")
	}
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		return loadJob{}, fmt.Errorf("backoffLimit must be 0: a retried generator would run after the others")
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return loadJob{}, fmt.Errorf("restartPolicy must be Never")
	}
	if len(s.Template.Spec.Containers) != 1 {
		return loadJob{}, fmt.Errorf("one container, the generator")
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"load", "--start-at=", "--out=-", "--quiet"} {
		if !strings.Contains(args, want) {
			return loadJob{}, fmt.Errorf("its args lack %q", want)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return loadJob{Name: job.Name, Completions: *s.Completions, Args: c.Args, Env: env}, nil
}

// stripComments drops YAML comment lines, so a document of comments only counts as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
