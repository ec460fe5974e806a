package console

import (
	"strings"
	"testing"
)

// TestMarkdownShowsHTMLAsText checks that raw HTML in a description of the
// contract shows as the text it is, inline and as a block, and never
// becomes markup.
func TestMarkdownShowsHTMLAsText(t *testing.T) {
	got := string(markdown("Send \"Authorization: Bearer <key>\" and `<code>`.\n\n<script>alert(1)</script>\n\n<div onclick=\"x\">a block</div>\n"))
	for _, want := range []string{"Bearer &lt;key&gt;", "<code>&lt;code&gt;</code>", "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;div onclick=&#34;x&#34;&gt;a block&lt;/div&gt;"} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q: %s", want, got)
		}
	}
	for _, bad := range []string{"<script", "<div", "<key>", "raw HTML omitted"} {
		if strings.Contains(got, bad) {
			t.Errorf("markdown holds %q: %s", bad, got)
		}
	}
}
