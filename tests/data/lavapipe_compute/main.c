/* A RenderDoc capture that replays on lavapipe, for gputop's tests of capture replay.
 *
 * IREE cannot be captured on lavapipe (under RenderDoc the device drops below IREE's
 * Vulkan 1.3 baseline), so this small program does what IREE does, by hand: one
 * arena buffer, compute pipelines whose entry points are named like IREE's
 * dispatches, push descriptors for the bindings, a fill, two dispatches with a
 * barrier between them, one submit. It loads RenderDoc before its Vulkan instance
 * and brackets the work with StartFrameCapture/EndFrameCapture, then checks the
 * results, so a capture it writes is of work known to be right.
 *
 * Build and run: tests/data/lavapipe_compute/make_capture.sh
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define N_SCALE 4096
#define N_ADD 2048
#define SLICE (N_SCALE * sizeof(float))
#define CHECK(x)                                                 \
  do {                                                           \
    VkResult r_ = (x);                                           \
    if (r_ != VK_SUCCESS) {                                      \
      fprintf(stderr, "%s failed: %d (line %d)\n", #x, r_, __LINE__); \
      exit(1);                                                   \
    }                                                            \
  } while (0)

typedef int (*GetApiFn)(int, void **);
typedef void (*FrameFn)(void *, void *);
typedef unsigned (*EndFn)(void *, void *);
typedef void (*TemplateFn)(const char *);

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(*size);
  if (fread(data, 1, *size, f) != *size) exit(1);
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s shaders.spv CAPTURE_PATH_TEMPLATE\n", argv[0]);
    return 2;
  }
  /* RenderDoc first: its layer must see the instance being created. */
  setenv("ENABLE_VULKAN_RENDERDOC_CAPTURE", "1", 1);
  void *rd = dlopen("librenderdoc.so", RTLD_NOW);
  if (!rd) {
    fprintf(stderr, "no librenderdoc.so: %s\n", dlerror());
    return 1;
  }
  void **api = NULL;
  if (!((GetApiFn)dlsym(rd, "RENDERDOC_GetAPI"))(10600, (void **)&api)) return 1;
  ((TemplateFn)api[11])(argv[2]); /* SetCaptureFilePathTemplate */

  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "lavapipe_compute", 1, NULL, 0,
                           VK_API_VERSION_1_2};
  const char *instance_ext[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 1, instance_ext};
  VkInstance instance;
  CHECK(vkCreateInstance(&ici, NULL, &instance));
  uint32_t count = 1;
  VkPhysicalDevice phys;
  vkEnumeratePhysicalDevices(instance, &count, &phys);
  if (count < 1) return 1;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys, &props);
  printf("device: %s\n", props.deviceName);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &priority};
  const char *device_ext[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qci, 0, NULL, 1, device_ext, NULL};
  VkDevice device;
  CHECK(vkCreateDevice(phys, &dci, NULL, &device));
  VkQueue queue;
  vkGetDeviceQueue(device, 0, 0, &queue);
  PFN_vkCmdPushDescriptorSetKHR push = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(device, "vkCmdPushDescriptorSetKHR");
  PFN_vkSetDebugUtilsObjectNameEXT set_name =
      (PFN_vkSetDebugUtilsObjectNameEXT)vkGetInstanceProcAddr(instance, "vkSetDebugUtilsObjectNameEXT");
  PFN_vkCmdBeginDebugUtilsLabelEXT begin_label =
      (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetInstanceProcAddr(instance, "vkCmdBeginDebugUtilsLabelEXT");
  PFN_vkCmdEndDebugUtilsLabelEXT end_label =
      (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetInstanceProcAddr(instance, "vkCmdEndDebugUtilsLabelEXT");

  /* One host-visible arena of 4 slices, as IREE suballocates one. */
  VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, 4 * SLICE,
                            VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
  VkBuffer arena;
  CHECK(vkCreateBuffer(device, &bci, NULL, &arena));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, arena, &req);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(phys, &mem);
  uint32_t type = 0;
  VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  while (type < mem.memoryTypeCount && !((req.memoryTypeBits & (1u << type)) && (mem.memoryTypes[type].propertyFlags & want) == want))
    type++;
  VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, type};
  VkDeviceMemory memory;
  CHECK(vkAllocateMemory(device, &mai, NULL, &memory));
  CHECK(vkBindBufferMemory(device, arena, memory, 0));
  float *host;
  CHECK(vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, (void **)&host));
  for (int i = 0; i < N_SCALE; i++) host[i] = (float)i;

  size_t code_size;
  unsigned char *code = read_file(argv[1], &code_size);
  VkShaderModuleCreateInfo smci = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, code_size, (uint32_t *)code};
  VkShaderModule module;
  CHECK(vkCreateShaderModule(device, &smci, NULL, &module));
  VkDescriptorSetLayoutBinding bindings[2] = {
      {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
      {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
  VkDescriptorSetLayoutCreateInfo dslci = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL,
                                           VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR, 2, bindings};
  VkDescriptorSetLayout set_layout;
  CHECK(vkCreateDescriptorSetLayout(device, &dslci, NULL, &set_layout));
  VkPipelineLayoutCreateInfo plci = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &set_layout, 0, NULL};
  VkPipelineLayout layout;
  CHECK(vkCreatePipelineLayout(device, &plci, NULL, &layout));
  const char *entries[2] = {"demo_dispatch_0_scale_4096_f32", "demo_dispatch_1_add_2048_f32"};
  VkPipeline pipelines[2];
  for (int p = 0; p < 2; p++) {
    VkComputePipelineCreateInfo cpci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
                                        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
                                         VK_SHADER_STAGE_COMPUTE_BIT, module, entries[p], NULL},
                                        layout, VK_NULL_HANDLE, 0};
    CHECK(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, NULL, &pipelines[p]));
  }
  if (set_name) { /* a debug name on the second pipeline: gputop shows it beside the entry point */
    VkDebugUtilsObjectNameInfoEXT name = {VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT, NULL,
                                          VK_OBJECT_TYPE_PIPELINE, (uint64_t)pipelines[1], "add one, in place"};
    CHECK(set_name(device, &name));
  }
  VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, 0};
  VkCommandPool pool;
  CHECK(vkCreateCommandPool(device, &cpi, NULL, &pool));
  VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                      VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  VkCommandBuffer cmd;
  CHECK(vkAllocateCommandBuffers(device, &cbai, &cmd));

  ((FrameFn)api[19])(NULL, NULL); /* StartFrameCapture */
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
  CHECK(vkBeginCommandBuffer(cmd, &begin));
  if (begin_label) {
    VkDebugUtilsLabelEXT label = {VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT, NULL, "demo", {0, 0, 0, 0}};
    begin_label(cmd, &label);
  }
  vkCmdFillBuffer(cmd, arena, SLICE, SLICE, 0);
  VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                             VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0,
                       NULL, 0, NULL);
  VkDescriptorBufferInfo slices[2] = {{arena, 0, SLICE}, {arena, SLICE, SLICE}};
  VkWriteDescriptorSet writes[2] = {
      {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, VK_NULL_HANDLE, 0, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &slices[0], NULL},
      {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, VK_NULL_HANDLE, 1, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &slices[1], NULL}};
  push(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 2, writes);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines[0]);
  vkCmdDispatch(cmd, N_SCALE / 64, 1, 1);
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier,
                       0, NULL, 0, NULL);
  /* The second dispatch sees only the first half of the output slice. */
  VkDescriptorBufferInfo half = {arena, SLICE, N_ADD * sizeof(float)};
  writes[1].pBufferInfo = &half;
  push(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 2, writes);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines[1]);
  vkCmdDispatch(cmd, N_ADD / 64, 1, 1);
  if (end_label) end_label(cmd);
  CHECK(vkEndCommandBuffer(cmd));
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cmd, 0, NULL};
  CHECK(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE));
  CHECK(vkQueueWaitIdle(queue));
  unsigned ended = ((EndFn)api[21])(NULL, NULL); /* EndFrameCapture */

  const float *out = host + N_SCALE;
  for (int i = 0; i < N_SCALE; i++) {
    float expected = 2.0f * (float)i + (i < N_ADD ? 1.0f : 0.0f);
    if (out[i] != expected) {
      fprintf(stderr, "wrong result at %d: %f, expected %f\n", i, out[i], expected);
      return 1;
    }
  }
  printf("results right; capture %s\n", ended ? "written" : "NOT written");
  vkDestroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
  return ended ? 0 : 1;
}
