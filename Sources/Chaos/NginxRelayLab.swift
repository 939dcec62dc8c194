/// The nginx configuration that puts the shipped relay site (`jobs/nginx-relay.conf`) in front of a loopback
/// `serve-relay`, for the tests and `job-bench relay-api`: the site with its ports and certificate substituted, and a
/// main configuration that runs it unprivileged in `directory` beside a static-file server answering
/// `/api/v1/health` from `directory/health.json` (the baseline nginx serves at its own speed).
package enum NginxRelayLab {
    /// The site and the main configuration. `siteEdits` are further literal replacements in the site (the bench
    /// lifts its per-client limits); a replacement whose text the shipped site no longer has is an error.
    package static func render(shippedSite: String, directory d: String, upstreamPort: Int, nginxPort: Int, staticPort: Int,
                              certificate: String, key: String, workers: Int = 1,
                              siteEdits: [(String, String)] = []) throws -> (site: String, main: String) {
        var site = shippedSite
        let edits = [("server 127.0.0.1:8480;", "server 127.0.0.1:\(upstreamPort);"), ("listen 443 ssl;", "listen 127.0.0.1:\(nginxPort) ssl;"),
                     ("listen [::]:443 ssl;", ""), ("/etc/ssl/relay/fullchain.pem", certificate), ("/etc/ssl/relay/privkey.pem", key)] + siteEdits
        for (from, to) in edits {
            guard site.contains(from) else { throw LabFailure("jobs/nginx-relay.conf no longer has \(from)") }
            site = site.replacingOccurrences(of: from, with: to)
        }
        let main = """
            worker_processes \(workers);
            user root;
            daemon off;
            pid \(d)/nginx.pid;
            error_log \(d)/nginx-error.log warn;
            events { worker_connections 4096; }
            http {
                client_body_temp_path \(d)/body; proxy_temp_path \(d)/proxy; fastcgi_temp_path \(d)/fastcgi;
                uwsgi_temp_path \(d)/uwsgi; scgi_temp_path \(d)/scgi;
                default_type application/json;
                include \(d)/site.conf;
                server {
                    listen 127.0.0.1:\(staticPort) ssl;
                    ssl_certificate \(certificate); ssl_certificate_key \(key);
                    ssl_protocols TLSv1.2 TLSv1.3;
                    access_log off;
                    keepalive_requests 100000;
                    location = /api/v1/health { alias \(d)/health.json; }
                }
            }
            """
        return (site, main)
    }

    /// The shipped site names a line the lab substitutes no more.
    package struct LabFailure: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }
}
