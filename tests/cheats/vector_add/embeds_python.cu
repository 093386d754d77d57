// Cheat: embeds a Python interpreter and lets PyTorch do the work (torch.add on tensors wrapped
// around the device pointers), loading libpython at run time so that nothing needs linking.
// Defence: the static check bans embedding Python or calling ATen/torch from CUDA code
// ("embedded-python") and loading code at run time ("dynamic-loading"); no task allows either
// (a PyTorch implementation is a torch_impl.py under a task with allow: [torch], never a .cu).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
typedef void (*py_init_t)(void);
typedef int (*py_run_t)(const char*);
extern "C" void vector_add(const float* a, const float* b, float* c, int n) {
    void* python = dlopen("libpython3.so", RTLD_NOW | RTLD_GLOBAL);
    if (!python) return;
    py_init_t init = (py_init_t)dlsym(python, "Py_Initialize");
    py_run_t run = (py_run_t)dlsym(python, "PyRun_SimpleString");
    init();
    char code[512];
    snprintf(code, sizeof code,
             "import torch\n"
             "def wrap(p, n):\n"
             "    class A: __cuda_array_interface__ = {'shape': (n,), 'typestr': '<f4', 'data': (p, False), "
             "'version': 3}\n"
             "    return torch.as_tensor(A(), device='cuda')\n"
             "torch.add(wrap(%zu, %d), wrap(%zu, %d), out=wrap(%zu, %d))\n",
             (size_t)a, n, (size_t)b, n, (size_t)c, n);
    run(code);
}
