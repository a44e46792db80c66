// `kjudge admin ...` and the queue-control subcommands (cancel, batch): operator tools on top of
// libkjqueue. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include "kjqueue/queue.h"

namespace kj::cli {

// The ACL SETUSER arguments for a tenant user: submit to its own stream, cancel its own jobs,
// read its own results and events, nothing else (design §8).
std::vector<std::string> tenant_acl(const std::string& tenant, const std::string& password, int partition);
// kjudge-gateway's user kj-gateway: submit and cancel for every tenant, read results, events and
// the token hash; not acknowledge jobs (`kjudge admin acl-gateway --password ...`).
std::vector<std::string> gateway_acl(const std::string& password, int partition);
// The same as one redis-cli line (password shown as given).
std::string acl_line(const std::vector<std::string>& argv);

int admin_queues(kjqueue::Queue& q, bool json);
int admin_job(kjqueue::Queue& q, const std::string& tenant, const std::string& job_id, bool json);
int admin_nodes(kjqueue::Queue& q, bool json);
int admin_drain(kjqueue::Queue& q, const std::string& node, bool undo);
int admin_dead(kjqueue::Queue& q, const std::string& tenant, const std::string& action, const std::string& entry, bool json);
int admin_quota(kjqueue::Queue& q, const std::string& tenant, long long max_queued);
int admin_cap(kjqueue::Queue& q, const std::string& tenant, long long max_running);
int admin_acl(kjqueue::Queue* q, const std::string& tenant, const std::string& password, int partition, bool apply);
// kjudge-gateway's API tokens (gateway/tokens.h): create/rotate print the new token (shown once);
// revoke removes every token of the tenant; list counts tokens per tenant.
int admin_token(kjqueue::Queue& q, const std::string& action, const std::string& tenant, bool json);
int admin_gateway_acl(kjqueue::Queue* q, const std::string& password, int partition, bool apply);
// A batch's counters as `kjudge batch` prints them (text or JSON); returns 0.
int print_batch_status(const std::string& tenant, const std::string& batch, const kjqueue::BatchStatus& b, bool json);
int batch_status(kjqueue::Queue& q, const std::string& tenant, const std::string& batch, bool json);

}  // namespace kj::cli
