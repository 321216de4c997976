// Gradient and parameter communication after the backward of all micro-batches, on the flat
// buffers of a model part (docs/training.md, "Data parallel and ZeRO"):
//
// - tied embedding: the wte gradients of stage 0 and the last stage summed over
//   grid.embedding() (embedding policy), first, so that everything after sees full sums;
// - ZeRO 0: buckets of the gradient buffer (contiguous ranges of bucket_floats) allreduced
//   (sum) over grid.dp() under the dp policy, key = bucket index + 1, with the model's tensors
//   in the bucket as pieces (bucket_pieces);
// - ZeRO 1: the whole gradient buffer reduce-scattered (sum) in one call over grid.zero()
//   (zero_grad policy, with the model's tensors as pieces), in place: this rank's shard
//   chunk_range(size, dp, rank) receives it;
// - ZeRO 2: the same shards, reduced bucket by bucket: bucket k gathers the k-th slice of
//   bucket_floats of every rank's shard (packed in rank order, so that chunk_range of the packed
//   bucket is exactly each rank's slice) and one reduce_scatter per bucket (key = k + 1, the
//   tensors of every slice as pieces) writes this rank's reduced slice into its shard;
// - ZeRO 1 and 2 then gather the updated parameters of every shard (zero_param policy).
#pragma once

#include <cstddef>
#include <vector>

#include "gpt_model.h"
#include "hycc/collectives.h"
#include "train_comm.h"

namespace hycc::train {

// This rank's ZeRO shard of a flat buffer of `total` floats (the whole buffer with dp 1).
ChunkRange zero_shard(size_t total, const ParallelGrid& grid);

void reduce_tied_embedding(GPT& model, TrainComm& c);
void allreduce_gradient_buckets(GPT& model, TrainComm& c, size_t bucket_floats);
// The model's tensors within floats [begin, begin + count) of the flat buffers, as a bucket's
// pieces (GradTensor::pieces, so that PowerSGD compresses each matrix): the whole rows of a
// matrix as a matrix; vectors, parts of rows at the bucket's edges and floats of no tensor as
// vectors.
std::vector<std::vector<size_t>> bucket_pieces(const GPT& model, size_t begin, size_t count);
// ZeRO stage 1 or 2: afterwards grads[shard] holds the sum over the zero group.
void reduce_scatter_gradients(GPT& model, TrainComm& c, int stage, size_t bucket_floats);
// ZeRO: params[every shard] = the owners' params[shard].
void allgather_parameters(GPT& model, TrainComm& c);

}  // namespace hycc::train
