package tools

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// maxResponseHeaderBytes bounds the status line and headers a server may
// send before the body.
const maxResponseHeaderBytes = 64 << 10

// newClient builds the tool's own client. Nothing comes from the
// environment: HTTP(S)_PROXY would send requests, and the policy checks
// with them, to a host the skill never declared.
func (h *HTTPTool) newClient() *http.Client {
	d := &dialer{tool: h.name, policy: h.enf.Load, resolve: h.cfg.resolve, cfg: &h.cfg}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if h.cfg.tlsConfig != nil {
		tlsConf = h.cfg.tlsConfig.Clone()
	}
	// HTTP/1.1 only: one request per connection at a time keeps the
	// dial check and the request it guards one to one, and h2 adds
	// nothing a tool call needs.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    h.cfg.limits.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  h.cfg.limits.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		Protocols:              &protocols,
	}
	// No Jar: a cookie one server sets must not ride along to the next,
	// nor from one call to another.
	return &http.Client{Transport: t, CheckRedirect: h.checkRedirect}
}

// checkRedirect runs before every redirect hop is sent. The hop gets the
// same URL check as the first request (its address is checked when
// dialled), and the skill's headers stay with the origin it addressed.
func (h *HTTPTool) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > h.cfg.limits.MaxRedirects {
		return fmt.Errorf("after %d hops: %w", h.cfg.limits.MaxRedirects, ErrTooManyRedirects)
	}
	e := h.enf.Load()
	if e == nil {
		return ErrHTTPUnbound
	}
	u, err := e.CheckURL(h.name, req.URL.String())
	if err != nil {
		return err // the *enforce.Denial: audited as a denial
	}
	req.URL, req.Host = u, "" // fetch what was checked
	if !crossedOrigin(via, req) {
		return nil
	}
	if req.ContentLength != 0 {
		// A 307/308 would send the skill's body to an origin it did not
		// address: hand the redirect back to the skill instead.
		return http.ErrUseLastResponse
	}
	// net/http drops Authorization and Cookie across hosts but copies
	// every other header; the skill's API key in X-Api-Key must not
	// follow a redirect either. Once the chain has left the first
	// origin it never gets them back: that origin did not choose the
	// path the chain returns to.
	traceparent := via[0].Header.Get("Traceparent")
	req.Header = http.Header{}
	h.ownHeaders(req.Header, traceparent)
	return nil
}

// crossedOrigin reports whether any hop so far, req included, went to an
// origin (scheme, host, port) other than the first request's.
func crossedOrigin(via []*http.Request, req *http.Request) bool {
	first := via[0].URL
	for _, r := range via[1:] {
		if !sameOrigin(first, r.URL) {
			return true
		}
	}
	return !sameOrigin(first, req.URL)
}

func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host
}
