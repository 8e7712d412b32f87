package runner

import (
	"reflect"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
)

// TestTemplateRidesInTheFragment: a request's tags and template name come
// back from vegeta's result whatever became of the request (here an error
// that quotes the URL, as a timeout's does), and leave the URL and the
// error as they were sent.
func TestTemplateRidesInTheFragment(t *testing.T) {
	for _, q := range []plan.Request{
		{Tags: []string{"create", "write"}, Template: "create-link"},
		{Template: "create-link"},
		{Tags: []string{"read"}},
		{},
	} {
		u := withTemplate("http://127.0.0.1:1/links", q)
		res := &vegeta.Result{URL: u, Error: `Post "` + u + `": context deadline exceeded`}
		tags, template := fromTemplate(res)
		if !reflect.DeepEqual(tags, q.Tags) || template != q.Template {
			t.Errorf("%+v came back as tags %q, template %q", q, tags, template)
		}
		if res.URL != "http://127.0.0.1:1/links" || res.Error != `Post "http://127.0.0.1:1/links": context deadline exceeded` {
			t.Errorf("%+v: URL %q, error %q", q, res.URL, res.Error)
		}
	}
}
