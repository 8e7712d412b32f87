package reload

import (
	"strings"
	"testing"
)

// TestParseNeverEchoesAFileThatIsNoPolicy: a --policies path naming some
// other file (a shadow file, a key) is refused without a word of it.
func TestParseNeverEchoesAFileThatIsNoPolicy(t *testing.T) {
	for _, data := range []string{
		"root:$6$secret-hash:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n",
		"-----BEGIN PRIVATE KEY-----\nsecretKEYmaterial\n-----END PRIVATE KEY-----\n",
		"secret_token: abc123secret\n",
	} {
		_, err := Parse("/etc/shadow", []byte(data))
		if err == nil {
			t.Fatalf("parsed %q", data)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "root") {
			t.Errorf("the error shows the file: %v", err)
		}
	}
}
