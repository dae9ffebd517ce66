// Run upload (parse -> validate -> store -> ack; the analysis queue is woken) and the run reads.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/wire/names.h"
#include "proto/wire/validation.h"
#include "services/collector/rpc/collector_service.h"
#include "services/collector/rpc/paging.h"
#include "services/collector/rpc/status.h"

namespace devtime::collector {
namespace {

IngestOutcome OutcomeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
      return IngestOutcome::kInvalid;
    case absl::StatusCode::kAlreadyExists:
      return IngestOutcome::kConflict;
    case absl::StatusCode::kUnavailable:
      return IngestOutcome::kUnavailable;
    default:
      return IngestOutcome::kError;
  }
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Why `bytes`, which protobuf would not parse, is not a `type`: the first string field that
// is not UTF-8 ("run.identity.host: invalid UTF-8 at byte 3 of the string") or the first
// message whose wire data breaks off ("run.ops[2]: ..."), by the field path from `path`;
// "" when this walk finds nothing (protobuf refused something it does not check). `bytes`
// begin at byte `base` of the request (offsets are said from its start).
std::string WhyNotParsed(std::string_view bytes, const google::protobuf::Descriptor& type,
                         const std::string& path, int base = 0, int depth = 0) {
  namespace io = google::protobuf::io;
  const std::string where = path.empty() ? "" : path + ": ";
  if (depth > 32) return "";  // protobuf's own nesting limit is 100; no run nests this deep
  io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  std::map<int, int> seen;  // field number -> occurrences so far (a repeated field's index)
  while (true) {
    const int offset = base + in.CurrentPosition();
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (static_cast<std::size_t>(in.CurrentPosition()) == bytes.size()) return "";
      return where + "the wire data breaks off at byte " + std::to_string(offset) +
             " (truncated, or not protobuf)";
    }
    const int number = static_cast<int>(tag >> 3);
    if (number == 0) {
      return where + "field number 0 at byte " + std::to_string(offset) + " (not protobuf)";
    }
    const google::protobuf::FieldDescriptor* field = type.FindFieldByNumber(number);
    std::string name = path.empty() ? "" : path + ".";
    name += field ? field->name() : "field " + std::to_string(number);
    if (field && field->is_repeated()) name += "[" + std::to_string(seen[number]++) + "]";
    bool read = false;
    switch (tag & 7) {
      case 0: {  // varint
        std::uint64_t value = 0;
        read = in.ReadVarint64(&value);
        break;
      }
      case 1: {  // 64-bit
        std::uint64_t value = 0;
        read = in.ReadLittleEndian64(&value);
        break;
      }
      case 5: {  // 32-bit
        std::uint32_t value = 0;
        read = in.ReadLittleEndian32(&value);
        break;
      }
      case 2: {  // length-delimited: a string, bytes, a message or packed numbers
        std::uint32_t length = 0;
        std::string value;
        read = in.ReadVarint32(&length) && length <= bytes.size() &&
               in.ReadString(&value, static_cast<int>(length));
        if (!read || !field) break;
        if (field->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
          if (auto bad = wire::FirstInvalidUtf8(value)) {
            return name + ": invalid UTF-8 at byte " + std::to_string(*bad) + " of the string";
          }
        } else if (field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
          const int start = base + in.CurrentPosition() - static_cast<int>(length);
          std::string why = WhyNotParsed(value, *field->message_type(), name, start, depth + 1);
          if (!why.empty()) return why;
        }
        break;
      }
      default:  // groups (no devtime message has one) and wire types that do not exist
        return name + ": wire type " + std::to_string(tag & 7) + " at byte " +
               std::to_string(offset) + " (not protobuf)";
    }
    if (!read) {
      return name + ": the wire data breaks off at byte " + std::to_string(offset) +
             " (truncated, or not protobuf)";
    }
  }
}

// `*request` from the call's bytes; INVALID_ARGUMENT saying why when they are not one.
absl::Status ParseUploadRequest(grpc::ByteBuffer* bytes, v1::UploadRunRequest* request) {
  const std::size_t size = bytes->Length();
  {
    grpc::ProtoBufferReader reader(bytes);
    if (request->ParseFromZeroCopyStream(&reader)) return absl::OkStatus();
  }
  grpc::Slice flat;
  std::string why = "its wire data does not parse";
  if (bytes->DumpToSingleSlice(&flat).ok()) {
    std::string found =
        WhyNotParsed(std::string_view(reinterpret_cast<const char*>(flat.begin()), flat.size()),
                     *v1::UploadRunRequest::descriptor(), "");
    if (!found.empty()) why = found;
  }
  return absl::InvalidArgumentError("UploadRun: the request is not a valid " +
                                    v1::UploadRunRequest::descriptor()->full_name() + " (" +
                                    std::to_string(size) + " bytes): " + why);
}

}  // namespace

void CollectorService::ServeUploadRunAsBytes() {
  // The method's index in the service, as the generated code counts it (the order of
  // collector.proto), found by name so that a method added before it cannot move it.
  const int index = google::protobuf::DescriptorPool::generated_pool()
                        ->FindServiceByName("devtime.v1.Collector")
                        ->FindMethodByName("UploadRun")
                        ->index();
  MarkMethodStreamed(index,
                     new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                         [this](grpc::ServerContext* context, UploadStream* stream) {
                           return UploadRunBytes(context, stream);
                         }));
}

grpc::Status CollectorService::UploadRunBytes(grpc::ServerContext* context, UploadStream* stream) {
  const auto start = std::chrono::steady_clock::now();
  auto caller = auth_.Authenticate(*context);
  if (!caller.ok()) {
    metrics_.RecordIngest(absl::IsUnavailable(caller.status()) ? IngestOutcome::kUnavailable
                                                               : IngestOutcome::kUnauthorized,
                          SecondsSince(start));
    return ToGrpcStatus(caller.status());
  }
  grpc::ByteBuffer bytes;
  if (!stream->Read(&bytes)) {
    // No message: gRPC ended the call (over the size limit, cancelled) and answers it itself,
    // as it did before any handler ran; or the client closed without sending one.
    return ToGrpcStatus(absl::InvalidArgumentError("UploadRun: the call sent no request"));
  }
  v1::UploadRunRequest request;
  absl::Status parsed = ParseUploadRequest(&bytes, &request);
  if (!parsed.ok()) {
    metrics_.RecordIngest(IngestOutcome::kInvalid, SecondsSince(start));
    return ToGrpcStatus(parsed);
  }
  v1::UploadRunResponse response;
  grpc::Status stored = StoreRun(*caller, request, &response, start);
  if (!stored.ok()) return stored;
  grpc::ByteBuffer out;
  bool own_buffer = false;
  grpc::Status serialized =
      grpc::SerializationTraits<v1::UploadRunResponse>::Serialize(response, &out, &own_buffer);
  if (!serialized.ok()) return serialized;
  // The run is committed: a failed write (the caller gone) changes nothing, and the caller's
  // retry is a duplicate.
  stream->Write(out);
  return grpc::Status::OK;
}

grpc::Status CollectorService::StoreRun(const Caller& caller, const v1::UploadRunRequest& request,
                                        v1::UploadRunResponse* response,
                                        std::chrono::steady_clock::time_point start) {
  auto elapsed = [&] { return SecondsSince(start); };
  if (caller.role == Role::kAgent && request.run().identity().host() != caller.host) {
    metrics_.RecordIngest(IngestOutcome::kUnauthorized, elapsed());
    return ToGrpcStatus(auth_.Forbidden("run.identity.host: agent " + caller.agent +
                                        " may only write runs for host " + caller.host + ", not '" +
                                        request.run().identity().host() + "'"));
  }
  absl::Status valid = request.has_run() ? wire::ValidateRun(request.run())
                                         : absl::InvalidArgumentError("run: is required");
  if (!valid.ok()) {
    metrics_.RecordIngest(IngestOutcome::kInvalid, elapsed());
    return ToGrpcStatus(valid);
  }
  auto outcome = runs_.IngestRun(request.run());
  if (!outcome.ok()) {
    metrics_.RecordIngest(OutcomeOf(outcome.status()), elapsed());
    return ToGrpcStatus(outcome.status());
  }
  bool duplicate = outcome->result == store::IngestResult::kDuplicate;
  metrics_.RecordIngest(duplicate ? IngestOutcome::kDuplicate : IngestOutcome::kStored, elapsed());
  if (request.run().source() == v1::RUN_SOURCE_MONITOR) metrics_.RecordMonitorWindow(duplicate);
  if (!duplicate) AnalyzeRun(request.run().identity().run_id());
  response->set_run_id(request.run().identity().run_id());
  response->set_duplicate(duplicate);
  *response->mutable_received_at() = outcome->received_at;
  return grpc::Status::OK;
}

// Detection is off the ack path: the stored run is in the analysis queue (runs.analyzed_at
// IS NULL, committed with it); this only wakes the queue's workers (analyzer.h), which judge
// it and record the verdict's metrics.
void CollectorService::AnalyzeRun(const std::string&) { analyzer_.Wake(); }

grpc::Status CollectorService::ListRuns(grpc::ServerContext* context,
                                        const v1::ListRunsRequest* request,
                                        v1::ListRunsResponse* response) {
  return ServeList(auth_.Authenticate(*context), "runs", *request, [&](const Page& page) {
    store::RunFilter filter;
    filter.model = request->model();
    filter.workload = request->workload();
    filter.source = request->source();  // issue 24: "monitor" for neuron-monitor windows
    if (request->has_since()) filter.since = request->since();
    filter.limit = page.size + 1;
    if (page.after) filter.after.emplace(page.after->micros, page.after->key);
    return FillPage(
        runs_.ListRuns(filter), page,
        [](const v1::RunInfo& run) {
          return PageKey{.micros = ToMicros(run.started_at()), .key = run.identity().run_id()};
        },
        response->mutable_runs(), response->mutable_next_page_token());
  });
}

grpc::Status CollectorService::GetRun(grpc::ServerContext* context,
                                      const v1::GetRunRequest* request,
                                      v1::GetRunResponse* response) {
  return ServeRead(
      *context, [&] { return runs_.GetRun(request->run_id()); }, response);
}

grpc::Status CollectorService::ResolveRun(grpc::ServerContext* context,
                                          const v1::ResolveRunRequest* request,
                                          v1::RunInfo* response) {
  return ServeRead(
      *context,
      [&] {
        store::RunRef ref{.ref = request->ref(),
                          .model = request->model(),
                          .workload = request->workload(),
                          .except_run_id = request->except_run_id()};
        if (request->has_instance_type()) ref.instance_type = request->instance_type();
        if (request->device_kind() != v1::DEVICE_KIND_UNSPECIFIED) {
          ref.device_kind = wire::DeviceKindName(request->device_kind());
        }
        return runs_.ResolveRun(ref);
      },
      response);
}

grpc::Status CollectorService::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest*,
                                          v1::ListModelsResponse* response) {
  return Serve(auth_.Authenticate(*context), [&](const Caller&) {
    return MoveInto(runs_.ListModels(), response->mutable_models());
  });
}

}  // namespace devtime::collector
