// A set of outstanding chunked MPI requests: posting a logical message as chunks, waiting with MPI_Waitsome so the
// caller learns which logical message finished first, checking every received count, and cleaning up (cancel
// receives, release sends) when an exception leaves requests behind.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "darray/comm/detail/chunking.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/deadline.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

class RequestSet {
 public:
  RequestSet() = default;
  RequestSet(const RequestSet&) = delete;
  RequestSet& operator=(const RequestSet&) = delete;
  RequestSet(RequestSet&& other) noexcept { swap(other); }
  RequestSet& operator=(RequestSet&& other) noexcept {
    if (this != &other) {
      abandon();
      swap(other);
    }
    return *this;
  }
  ~RequestSet() { abandon(); }

  // Posts one Isend per chunk of [data, data + bytes); `message` is the caller's id for this logical message.
  void post_send(MPI_Comm comm, const std::byte* data, std::size_t bytes, int peer, int tag, std::size_t message,
                 std::size_t max_chunk, const char* api) {
    const std::size_t n = chunk_count(bytes, max_chunk);
    reserve_more(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Chunk c = chunk_at(bytes, max_chunk, i);
      MPI_Request r = MPI_REQUEST_NULL;
      DARRAY_MPI_CHECK(MPI_Isend(data + c.offset, to_mpi_count(c.bytes, api), MPI_BYTE, peer, tag, comm, &r));
      push(r, Posted{message, -1, peer, -1});
    }
  }

  // Posts one Irecv per chunk; returns the number of chunks, which the caller counts down in wait_some. With
  // check_tag the chunks accept any tag and wait_some checks that each carried `tag`: a sender that ran another
  // operation (whose tag is another fingerprint) is an error instead of bytes taken for this operation's.
  std::size_t post_recv(MPI_Comm comm, std::byte* data, std::size_t bytes, int peer, int tag, std::size_t message,
                        std::size_t max_chunk, const char* api, bool check_tag = false) {
    const std::size_t n = chunk_count(bytes, max_chunk);
    reserve_more(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Chunk c = chunk_at(bytes, max_chunk, i);
      const int count = to_mpi_count(c.bytes, api);
      MPI_Request r = MPI_REQUEST_NULL;
      DARRAY_MPI_CHECK(MPI_Irecv(data + c.offset, count, MPI_BYTE, peer, check_tag ? MPI_ANY_TAG : tag, comm, &r));
      push(r, Posted{message, count, peer, check_tag ? tag : -1});
    }
    return n;
  }

  std::size_t pending() const { return m_pending; }

  // Blocks until at least one request completes; calls on_receive(message) for each completed receive chunk, after
  // checking that it carried exactly the expected bytes. Sends complete silently. A receive posted with check_tag
  // that carried another tag or size (another operation on the peer) is not reported: the first such mismatch is
  // thrown as an InvalidArgument once every request has completed, so no message of this exchange is left behind
  // for the next one to receive.
  template <class OnReceive>
  void wait_some(OnReceive&& on_receive, const char* api) {
    if (m_pending == 0) return;
    int outcount = 0;
    m_indices.resize(m_requests.size());
    m_statuses.resize(m_requests.size());
    const int rc = wait_or_poll(outcount, api);
    const bool in_status = rc == MPI_ERR_IN_STATUS;
    if (in_status) {
      for (int k = 0; k < outcount; ++k) {
        const MPI_Status& st = m_statuses[static_cast<std::size_t>(k)];
        const Posted& p = m_posted[static_cast<std::size_t>(m_indices[static_cast<std::size_t>(k)])];
        if (st.MPI_ERROR != MPI_SUCCESS && !(st.MPI_ERROR == MPI_ERR_TRUNCATE && p.tag >= 0))
          throw MpiError(api,
                         std::string(p.expected < 0 ? "send to" : "receive from") + " process " +
                             std::to_string(p.peer) + " failed: " + mpi_error_string(st.MPI_ERROR),
                         st.MPI_ERROR, __FILE__, __LINE__);
      }
    } else {
      DARRAY_MPI_CHECK(rc);
    }
    if (outcount == MPI_UNDEFINED) {  // every request was already null: nothing was really pending
      m_pending = 0;
      throw_mismatch(api);
      return;
    }
    m_pending -= static_cast<std::size_t>(outcount);
    for (int k = 0; k < outcount; ++k) {
      const Posted& p = m_posted[static_cast<std::size_t>(m_indices[static_cast<std::size_t>(k)])];
      if (p.expected < 0) continue;
      const MPI_Status& st = m_statuses[static_cast<std::size_t>(k)];
      if (p.tag >= 0) {  // tag and size in one check
        int got = 0;
        MPI_Status copy = st;
        DARRAY_MPI_CHECK(MPI_Get_count(&copy, MPI_BYTE, &got));
        const bool truncated = in_status && st.MPI_ERROR == MPI_ERR_TRUNCATE;
        if (truncated || st.MPI_TAG != p.tag || got != p.expected) {
          if (m_mismatch.empty()) {
            std::ostringstream os;
            os << "process " << p.peer << " sent data of another operation or of other arrays (message tag "
               << st.MPI_TAG << ", expected " << p.tag << "; " << (truncated ? "more than " : "") << got
               << " bytes, expected " << p.expected
               << "): the processes called different operations, or the same one with different shapes, shardings or "
                  "element types";
            m_mismatch = os.str();
          }
          continue;
        }
      } else {
        check_received(st, p.expected, p.peer, api);
      }
      if (m_mismatch.empty()) on_receive(p.message);
    }
    if (m_pending == 0) throw_mismatch(api);
  }

  void wait_all(const char* api) {
    while (m_pending > 0) wait_some([](std::size_t) {}, api);
    clear();
  }

  // Releases outstanding requests without throwing: receives are cancelled and completed, sends are left to MPI
  // (MPI_Request_free), because waiting for a send whose receiver failed could block forever.
  void abandon() noexcept {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized) {
      for (std::size_t i = 0; i < m_requests.size(); ++i) {
        MPI_Request& r = m_requests[i];
        if (r == MPI_REQUEST_NULL) continue;
        if (m_posted[i].expected >= 0) {
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
          MPI_Request_free(&r);
        }
      }
    }
    clear();
  }

  // A receive must carry exactly the chunk both sides derived; a short message would otherwise leave stale bytes
  // unnoticed (MPI accepts fewer bytes than posted without error).
  static void check_received(const MPI_Status& st, int expected, int peer, const char* api) {
    int got = 0;
    MPI_Status copy = st;
    DARRAY_MPI_CHECK(MPI_Get_count(&copy, MPI_BYTE, &got));
    DARRAY_THROW_IF(got != expected, InvalidArgument, api,
                    "received a " << got << "-byte message from process " << peer << " where " << expected
                                  << " bytes were expected; the sender's sizes or DARRAY_MPI_MAX_MESSAGE_BYTES differ "
                                     "from this process's");
  }

 private:
  struct Posted {
    std::size_t message;
    int expected;  // bytes for a receive chunk, -1 for a send chunk
    int peer;
    int tag;  // the tag a receive chunk must carry, -1: not checked (posted with its tag)
  };

  // MPI_Waitsome, or with DARRAY_TIMEOUT_S set, MPI_Testsome until a request completes or the deadline (counted
  // from the first request posted) passes, which throws naming the peers still pending.
  int wait_or_poll(int& outcount, const char* api) {
    const int n = static_cast<int>(m_requests.size());
    const double timeout_s = wait_timeout_seconds();
    const WorldReturnsErrors world_returns_errors;
    if (timeout_s <= 0) return MPI_Waitsome(n, m_requests.data(), &outcount, m_indices.data(), m_statuses.data());
    PollPause pause;
    while (true) {
      const int rc = MPI_Testsome(n, m_requests.data(), &outcount, m_indices.data(), m_statuses.data());
      if (rc != MPI_SUCCESS || outcount != 0) return rc;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - m_first_post).count() >= timeout_s) {
        std::vector<int> missing;
        for (std::size_t i = 0; i < m_requests.size(); ++i)
          if (m_requests[i] != MPI_REQUEST_NULL) missing.push_back(m_posted[i].peer);
        throw_timed_out(api, timeout_s, std::move(missing));
      }
      pause.idle();
    }
  }

  void reserve_more(std::size_t n) {
    m_requests.reserve(m_requests.size() + n);
    m_posted.reserve(m_posted.size() + n);
  }
  void push(MPI_Request r, Posted p) {
    if (m_requests.empty()) m_first_post = std::chrono::steady_clock::now();
    m_requests.push_back(r);
    m_posted.push_back(p);
    ++m_pending;
  }
  void clear() {
    m_requests.clear();
    m_posted.clear();
    m_pending = 0;
    m_mismatch.clear();
  }
  // Throws the mismatch a receive found, once nothing is pending.
  void throw_mismatch(const char* api) {
    if (m_mismatch.empty()) return;
    std::string what = std::move(m_mismatch);
    clear();
    DARRAY_THROW(InvalidArgument, api, what);
  }
  void swap(RequestSet& o) noexcept {
    std::swap(m_requests, o.m_requests);
    std::swap(m_posted, o.m_posted);
    std::swap(m_pending, o.m_pending);
    std::swap(m_indices, o.m_indices);
    std::swap(m_statuses, o.m_statuses);
    std::swap(m_first_post, o.m_first_post);
    std::swap(m_mismatch, o.m_mismatch);
  }

  std::vector<MPI_Request> m_requests;
  std::vector<Posted> m_posted;
  std::size_t m_pending = 0;
  std::vector<int> m_indices;
  std::vector<MPI_Status> m_statuses;
  std::chrono::steady_clock::time_point m_first_post{};
  std::string m_mismatch;  // the first receive that carried another operation's message, thrown when all are done
};

}  // namespace detail
}  // namespace darray
