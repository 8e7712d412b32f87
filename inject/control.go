package inject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Controller switches failpoints on and off in a running service.
type Controller interface {
	// Enable sets the failpoint at path to term.
	Enable(ctx context.Context, path, term string) error
	// Disable switches the failpoint at path off.
	Disable(ctx context.Context, path string) error
	// Active returns the failpoints that are on, path -> term.
	Active(ctx context.Context) (map[string]string, error)
}

// ErrUnreachable wraps every failure to reach a control endpoint, as opposed
// to the endpoint refusing a request.
var ErrUnreachable = errors.New("failpoint control endpoint unreachable")

// HTTPController talks to a failpoint control endpoint: ControlHandler,
// which requires Token, or the open one pingcap/failpoint serves when a
// process starts with GO_FAILPOINTS_HTTP set. PUT /path sets a term, DELETE
// /path disables it, GET / lists "path=term" lines.
type HTTPController struct {
	// Base is the endpoint's URL, e.g. http://127.0.0.1:7070.
	Base string
	// Client is used for requests; nil means a client with a 2 s timeout.
	Client *http.Client
	// Token, when set, is sent on every request as "Authorization: Bearer
	// TOKEN", which ControlHandler requires. pingcap/failpoint's own
	// endpoint ignores it.
	Token string
}

// ErrUnauthorized is returned when the endpoint refused the request for
// want of the right token (401).
var ErrUnauthorized = errors.New("the failpoint control endpoint refused the token")

// NewHTTPController returns a controller for the endpoint at base
// ("127.0.0.1:7070" or "http://127.0.0.1:7070").
func NewHTTPController(base string) *HTTPController {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &HTTPController{Base: strings.TrimRight(base, "/"), Client: &http.Client{Timeout: 2 * time.Second}}
}

func (c *HTTPController) do(ctx context.Context, method, path, body string) (int, string, error) {
	u := c.Base + "/" + (&url.URL{Path: path}).EscapedPath()
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if c.Token != "" {
		req.Header.Set(TokenHeader, "Bearer "+c.Token)
	}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %s %s: %w", ErrUnreachable, method, c.Base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", fmt.Errorf("%w: %s %s: %v", ErrUnreachable, method, c.Base, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		what := "without a token"
		if c.Token != "" {
			what = "with this run's token"
		}
		return 0, "", fmt.Errorf("%w: %s %s %s: %d %s", ErrUnauthorized, method, c.Base, what, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return resp.StatusCode, string(b), nil
}

// Enable implements Controller.
func (c *HTTPController) Enable(ctx context.Context, path, term string) error {
	code, body, err := c.do(ctx, http.MethodPut, path, term)
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("control endpoint refused term %q for %s: %d %s", term, path, code, strings.TrimSpace(body))
	}
	return nil
}

// Disable implements Controller. Disabling a failpoint that was never set is
// not an error.
func (c *HTTPController) Disable(ctx context.Context, path string) error {
	code, body, err := c.do(ctx, http.MethodDelete, path, "")
	if err != nil {
		return err
	}
	if code/100 != 2 && !strings.Contains(body, "not exist") {
		return fmt.Errorf("control endpoint refused to disable %s: %d %s", path, code, strings.TrimSpace(body))
	}
	return nil
}

// Active implements Controller.
func (c *HTTPController) Active(ctx context.Context) (map[string]string, error) {
	code, body, err := c.do(ctx, http.MethodGet, "", "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("control endpoint listing failed: %d %s", code, strings.TrimSpace(body))
	}
	return ParseList(body), nil
}

// ParseList parses the endpoint's "path=term" listing and keeps the
// failpoints that are on (a disabled one is listed with an empty term).
func ParseList(body string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		path, term, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.TrimSpace(term) == "" {
			continue
		}
		out[path] = term
	}
	return out
}
