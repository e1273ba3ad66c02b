package checks

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// The gRPC check makes one unary call, grpc.health.v1.Health/Check, by
// hand (see doc.go for why). On the wire, per gRPC's PROTOCOL-HTTP2 and
// health-checking documents:
//
//	request:  POST /grpc.health.v1.Health/Check over HTTP/2
//	          content-type: application/grpc, te: trailers, grpc-timeout
//	          body: Length-Prefixed-Message = flag(1 byte, 0: not
//	          compressed) + length(4 bytes, big-endian) + message, the
//	          message a protobuf HealthCheckRequest{string service = 1}
//	response: :status 200, content-type application/grpc*, one
//	          Length-Prefixed-Message HealthCheckResponse{ServingStatus
//	          status = 1}, then trailers grpc-status (0 = OK) and
//	          grpc-message; or, for an immediate error, "trailers only":
//	          grpc-status in the one HEADERS frame, and no body.
const grpcHealthPath = "/grpc.health.v1.Health/Check"

// grpcMaxResponse bounds the response read: a HealthCheckResponse is 7
// bytes framed; anything near this is not a health service.
const grpcMaxResponse = 64 << 10

// grpcProbe asks a gRPC health service: SERVING is passing; any other
// serving status, a non-OK grpc-status, or a transport error is critical.
type grpcProbe struct {
	client    *http.Client
	url       string
	target    string // as written, for the output
	request   []byte // the framed HealthCheckRequest, the same every run
	userAgent string
}

func newGRPCProbe(d *Definition, userAgent string) *grpcProbe {
	addr, service, _ := strings.Cut(d.GRPC, "/")
	// net/http's own HTTP/2: Protocols with only UnencryptedHTTP2 makes
	// http:// requests speak h2c with prior knowledge (no Upgrade dance,
	// which gRPC servers do not do); with only HTTP2, https:// requests
	// must negotiate h2 by ALPN. No keep-alives, as for HTTP checks: each
	// run dials afresh and leaves no connection behind.
	protocols := new(http.Protocols)
	scheme := "http"
	if d.GRPCUseTLS {
		protocols.SetHTTP2(true)
		scheme = "https"
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	tr := &http.Transport{
		Proxy:             nil,
		Protocols:         protocols,
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: d.TLSSkipVerify,
			ServerName:         d.TLSServerName,
		},
	}
	return &grpcProbe{
		client:    &http.Client{Transport: tr},
		url:       scheme + "://" + addr + grpcHealthPath,
		target:    d.GRPC,
		request:   encodeHealthRequest(service),
		userAgent: userAgent,
	}
}

func (p *grpcProbe) probe(ctx context.Context) result {
	fail := func(format string, args ...any) result {
		return result{catalog.HealthCritical, "gRPC check " + p.target + ": " + fmt.Sprintf(format, args...)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(p.request))
	if err != nil {
		return fail("%v", err)
	}
	req.Header = http.Header{
		"Content-Type": {"application/grpc"},
		"Te":           {"trailers"},
		"User-Agent":   {p.userAgent},
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", grpcTimeout(time.Until(dl)))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fail("%v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail("HTTP status %s", resp.Status)
	}
	// Reading to EOF is what makes the trailers arrive in resp.Trailer.
	body, err := io.ReadAll(io.LimitReader(resp.Body, grpcMaxResponse))
	if err != nil {
		return fail("reading the response: %v", err)
	}
	code := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if code == "" { // trailers-only response
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	switch {
	case code == "":
		return fail("no grpc-status in the response (not a gRPC server?)")
	case code != "0":
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m // grpc-message is percent-encoded
		}
		return fail("%s: %s", grpcCodeName(code), msg)
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/grpc"):
		return fail("content-type %q is not gRPC", resp.Header.Get("Content-Type"))
	}
	status, err := decodeHealthResponse(body)
	if err != nil {
		return fail("%v", err)
	}
	if status == servingStatusServing {
		return result{catalog.HealthPassing, "gRPC check " + p.target + ": SERVING"}
	}
	return fail("%s", servingStatusName(status))
}

// grpcTimeout formats d as a grpc-timeout value: at most 8 digits and a
// unit (m: milliseconds, S: seconds).
func grpcTimeout(d time.Duration) string {
	ms := max(d.Milliseconds(), 1)
	if ms < 1e8 {
		return strconv.FormatInt(ms, 10) + "m"
	}
	return strconv.FormatInt(min(ms/1000, 1e8-1), 10) + "S"
}

// encodeHealthRequest returns the framed HealthCheckRequest for service.
// Field 1, wire type 2 (length-delimited) is key byte 0x0a; proto3 leaves
// an empty string out, so service "" (the whole server) is an empty
// message.
func encodeHealthRequest(service string) []byte {
	var msg []byte
	if service != "" {
		msg = append(msg, 0x0a)
		msg = binary.AppendUvarint(msg, uint64(len(service)))
		msg = append(msg, service...)
	}
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	return append(frame, msg...)
}

// HealthCheckResponse.ServingStatus values.
const (
	servingStatusUnknown        = 0
	servingStatusServing        = 1
	servingStatusNotServing     = 2
	servingStatusServiceUnknown = 3
)

func servingStatusName(s uint64) string {
	switch s {
	case servingStatusUnknown:
		return "UNKNOWN"
	case servingStatusServing:
		return "SERVING"
	case servingStatusNotServing:
		return "NOT_SERVING"
	case servingStatusServiceUnknown:
		return "SERVICE_UNKNOWN"
	}
	return "serving status " + strconv.FormatUint(s, 10)
}

// decodeHealthResponse reads the one framed HealthCheckResponse of a
// response body and returns its status field (0, UNKNOWN, when absent, as
// proto3 has it). Unknown fields are skipped, as protobuf requires.
func decodeHealthResponse(body []byte) (uint64, error) {
	if len(body) < 5 {
		return 0, fmt.Errorf("response of %d bytes is shorter than a message header", len(body))
	}
	if body[0] != 0 {
		// We send no grpc-accept-encoding, so a server must not compress.
		return 0, errors.New("compressed response message")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if uint64(len(body)-5) != uint64(n) {
		return 0, fmt.Errorf("response message of %d bytes announced, %d sent", n, len(body)-5)
	}
	msg := body[5:]
	var status uint64
	for len(msg) > 0 {
		key, k := binary.Uvarint(msg)
		if k <= 0 {
			return 0, errors.New("bad protobuf field key")
		}
		msg = msg[k:]
		field, wire := key>>3, key&7
		var skip uint64
		switch wire {
		case 0: // varint
			v, k := binary.Uvarint(msg)
			if k <= 0 {
				return 0, errors.New("bad protobuf varint")
			}
			msg = msg[k:]
			if field == 1 {
				status = v // the last occurrence wins
			}
			continue
		case 1: // 64-bit
			skip = 8
		case 2: // length-delimited
			l, k := binary.Uvarint(msg)
			if k <= 0 {
				return 0, errors.New("bad protobuf length")
			}
			msg, skip = msg[k:], l
		case 5: // 32-bit
			skip = 4
		default:
			return 0, fmt.Errorf("protobuf wire type %d not supported", wire)
		}
		if field == 1 {
			return 0, fmt.Errorf("status field has wire type %d, want varint", wire)
		}
		if skip > uint64(len(msg)) {
			return 0, errors.New("truncated protobuf field")
		}
		msg = msg[skip:]
	}
	return status, nil
}

// grpcCodeNames are the gRPC status codes, by number.
var grpcCodeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

func grpcCodeName(code string) string {
	if n, err := strconv.Atoi(code); err == nil && n >= 0 && n < len(grpcCodeNames) {
		return grpcCodeNames[n]
	}
	return "grpc-status " + code
}
