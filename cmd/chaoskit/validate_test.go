package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// httpFaultScenario is the truth case whose faults are on HTTP and gRPC
// proxies.
const httpFaultScenario = "../../testdata/truth/http-grpc-faults/scenario.yaml"

// TestValidateAndRunRefuseBadInput runs the real binary on input that
// used to hang it, exhaust it, leak a file into its errors, pass validate
// and fail only when run, or need several rounds of validate: both
// validate and run refuse each at once, exit 2, with the file, the
// position and a hint.
func TestValidateAndRunRefuseBadInput(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	good := string(src)
	edit := func(from, to string) string {
		if !strings.Contains(good, from) {
			t.Fatalf("%q is not in %s", from, scenarioFile)
		}
		return strings.Replace(good, from, to, 1)
	}
	// The truth case with HTTP and gRPC proxies, and a descriptor set (the
	// gRPC health service's) for its gRPC proxy.
	hsrc, err := os.ReadFile(httpFaultScenario)
	if err != nil {
		t.Fatal(err)
	}
	httpGood := string(hsrc)
	httpEdit := func(from, to string) string {
		if !strings.Contains(httpGood, from) {
			t.Fatalf("%q is not in %s", from, httpFaultScenario)
		}
		return strings.Replace(httpGood, from, to, 1)
	}
	health, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(grpc_health_v1.File_grpc_health_v1_health_proto)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// files are written to a temporary directory; s.yaml is loaded.
		files map[string]string
		fifo  bool // s.yaml is a FIFO
		args  []string
		want  []string
		// never is text of a file that must not appear in the output.
		never string
	}{
		{name: "a FIFO", fifo: true, want: []string{"s.yaml: not a regular file but a named pipe (FIFO)"}},
		{name: "nested brackets", files: map[string]string{"s.yaml": "name: x\nload: " + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + "\n"},
			want: []string{"s.yaml:2:71: mappings and lists nest more than 64 deep here"}},
		{name: "an include of a file that is not a scenario", files: map[string]string{"s.yaml": edit("description:", "include: secret.yaml\ndescription:"), "secret.yaml": "password: hunter2\n"},
			want: []string{"s.yaml:2:10: included file secret.yaml is not a partial scenario"}, never: "hunter2"},
		{name: "an include out of the tree", files: map[string]string{"s.yaml": edit("description:", "include: /etc/passwd\ndescription:")},
			want: []string{"s.yaml:2:10: included file /etc/passwd is not a scenario file"}, never: "root:"},
		{name: "two documents", files: map[string]string{"s.yaml": good + "---\nname: again\n"},
			want: []string{fmt.Sprintf("s.yaml:%d:1: a second YAML document starts here", strings.Count(good, "\n")+1)}},
		{name: "three kinds of mistake in one pass", files: map[string]string{"s.yaml": strings.NewReplacer("  timeout: 1s", "  timout: 1s", "point: store/productQuery", "point: store/productQuerry", "status == 200 for", "statsu == 200 for").Replace(good)},
			want: []string{fmt.Sprintf(`s.yaml:%d:3: unknown field "timout"`, lineOf(t, good, "  timeout: 1s")), fmt.Sprintf(`s.yaml:%d:16: unknown failpoint "store/productQuerry"`, lineOf(t, good, "point: store/productQuery")), fmt.Sprintf(`s.yaml:%d:9: unknown name statsu`, lineOf(t, good, "status == 200 for"))}},
		{name: "--rate-scale NaN", files: map[string]string{"s.yaml": good}, args: []string{"--rate-scale", "NaN"}, want: []string{"--rate-scale: factor NaN is not a number from 0.0001 to 1e+06"}},
		{name: "--rate-scale Inf", files: map[string]string{"s.yaml": good}, args: []string{"--rate-scale", "Inf"}, want: []string{"--rate-scale: factor +Inf is not a number from 0.0001 to 1e+06"}},
		{name: "a NUL in the name", files: map[string]string{"s.yaml": edit("name: db-timeout-serves-cache", `name: "db\0timeout"`)},
			want: []string{`s.yaml:1:7: scenario name "db\x00timeout" holds a control character`}},
		{name: "a name that is the parent directory", files: map[string]string{"s.yaml": edit("name: db-timeout-serves-cache", `name: ".."`)},
			want: []string{`s.yaml:1:7: scenario name ".." names a directory that already exists`}},
		{name: "an unknown demo flag", files: map[string]string{"s.yaml": edit(`args: ["--db-timeout=${db_timeout}"]`, `args: ["--db-timeout=${db_timeout}", --no-such-flag]`)},
			want: []string{fmt.Sprintf(`s.yaml:%d:11: demo args ["--db-timeout=100ms" "--no-such-flag"]: unknown flag: --no-such-flag`, lineOf(t, good, "    args: "))}},
		{name: "an unknown gRPC method of a proxy with a descriptor set", files: map[string]string{"health.pb": string(health),
			"s.yaml": httpEdit("    protocol: grpc\n", "    protocol: grpc\n    descriptor_set: health.pb\n")},
			want: []string{fmt.Sprintf(`s.yaml:%d:30: the descriptor set of proxy stock has no method truth.Stock/Get (choose one of grpc.health.v1.Health/Check, grpc.health.v1.Health/List, grpc.health.v1.Health/Watch)`, lineOf(t, httpGood, "grpc_method: truth.Stock/Get")+1)}},
		{name: "a malformed gRPC method", files: map[string]string{"s.yaml": httpEdit("grpc_method: truth.Stock/Get", "grpc_method: truth.Stock.Get")},
			want: []string{fmt.Sprintf(`s.yaml:%d:30: "truth.Stock.Get" is not a gRPC method name (write package.Service/Method, such as truth.Stock/Get)`, lineOf(t, httpGood, "grpc_method: truth.Stock/Get"))}},
		{name: "an HTTP fault's probability of 1.5", files: map[string]string{"s.yaml": httpEdit("probability: 0.5", "probability: 1.5")},
			want: []string{fmt.Sprintf(`s.yaml:%d:22: probability 1.5 is outside 0..1 (write a share such as 0.3)`, lineOf(t, httpGood, "probability: 0.5"))}},
		{name: "an unknown HTTP fault action", files: map[string]string{"s.yaml": httpEdit("action: abort", "action: abrot")},
			want: []string{fmt.Sprintf(`s.yaml:%d:17: unknown action "abrot" for the http proxy prices (did you mean "abort"?)`, lineOf(t, httpGood, "action: abort"))}},
		{name: "a rate no machine can attempt", files: map[string]string{"s.yaml": edit("rate: 200/s", "rate: 1000000000/s")},
			want: []string{fmt.Sprintf("s.yaml:%d:9: rate 1000000000/s is 1000000000 requests a second, more than the 1000000/s chaoskit can attempt", lineOf(t, good, "  rate: 200/s"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				writeFile(t, dir, name, text)
			}
			file := filepath.Join(dir, "s.yaml")
			if tt.fifo {
				if err := syscall.Mkfifo(file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, cmd := range [][]string{{"validate", file}, {"run", file, "--report-dir", filepath.Join(dir, "out")}} {
				res := runBin(t, bin, append(cmd, tt.args...)...)
				if res.code != 2 {
					t.Errorf("%s: exit %d, want 2\n%s%s", cmd[0], res.code, res.stdout, res.stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(res.stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", cmd[0], w, res.stderr)
					}
				}
				if tt.never != "" && strings.Contains(res.stdout+res.stderr, tt.never) {
					t.Errorf("%s: the output shows %q:\n%s", cmd[0], tt.never, res.stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Error("run created its report directory for input it refused")
			}
		})
	}
}

// TestValidateSaysWhichPartialsItSkipped checks a directory of scenarios
// may hold a partial (_name.yaml) that run and validate skip, and that
// validate names it and the scenarios that include it.
func TestValidateSaysWhichPartialsItSkipped(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	dir := t.TempDir()
	start, end := strings.Index(text, "target:"), strings.Index(text, "phases:")
	writeFile(t, dir, "_shop.yaml", text[start:end])
	writeFile(t, dir, "_unused.yaml", text[start:end])
	writeFile(t, dir, "s.yaml", text[:start]+"include: _shop.yaml\n"+text[end:])
	res := runBin(t, bin, "validate", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		"ok    " + filepath.Join(dir, "s.yaml") + "  db-timeout-serves-cache (3 phases, 1 faults, 2 contracts)",
		"skip  " + filepath.Join(dir, "_shop.yaml") + "  a partial, checked as included by db-timeout-serves-cache",
		"skip  " + filepath.Join(dir, "_unused.yaml") + "  a partial, included by no scenario here (not checked)",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
}

// TestFuzzAndExploreRunScenariosThatInclude runs chaoskit fuzz and explore
// on a fuzz scenario whose target and load are in a partial it includes:
// both exited 2, their trials written where the include could not be found.
func TestFuzzAndExploreRunScenariosThatInclude(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	src, err := os.ReadFile(quickFuzz)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	// One point, one action: explore runs a baseline and one single.
	text = strings.Replace(text, "      actions: [error, timeout]\n", "      actions: [error]\n", 1)
	text = text[:strings.Index(text, "    - point: store/orderWrite")] + text[strings.Index(text, "contracts:"):]
	dir := t.TempDir()
	start, end := strings.Index(text, "target:"), strings.Index(text, "fuzz:")
	writeFile(t, dir, "_demo.yaml", text[start:end])
	file := writeFile(t, dir, "quick.yaml", text[:start]+"include: _demo.yaml\n"+text[end:])
	res := runBin(t, bin, "fuzz", file, "--runs", "1", "--seed", "7", "--report-dir", filepath.Join(dir, "fuzz"))
	if res.code != 0 || !strings.Contains(res.stdout, "no invariant broken in 1 trials") {
		t.Errorf("fuzz: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = runBin(t, bin, "explore", file, "--report-dir", filepath.Join(dir, "explore"))
	if res.code != 0 || !strings.Contains(res.stdout, "1 single faults and 0 pairs: 2 runs") {
		t.Errorf("explore: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}
