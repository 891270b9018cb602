// A vector add written by hand in PTX: the raw-driver baseline of the GPU benchmark and a
// kernel the CUDA runtime tests load without going through tritium's compiler.
// Parameters: (u64 x, u64 y, u64 out, u32 n); one element per thread.
#pragma once

namespace tritium::testing {

inline constexpr const char* vec_add_ptx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry vec_add(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p, %r5, %r1;
  @%p bra DONE;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}
)";

} // namespace tritium::testing
