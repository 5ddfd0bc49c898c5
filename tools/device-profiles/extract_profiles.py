#!/usr/bin/env python3
"""Prints the device limits and features RFA-VK reads (runtime/src/gpu/device_profiles.cpp) from
Khronos Vulkan-Profiles JSON files, one line per profile, so the table can be checked against its
sources. Usage:

  extract_profiles.py GIT_DIR COMMIT NAME=PATH[:PROFILE] ...

GIT_DIR is a clone (bare or not) of github.com/KhronosGroup/Vulkan-Profiles; files are read with
`git show COMMIT:PATH`, nothing is downloaded. PROFILE picks one profile of a file that holds
several (VP_LUNARG_minimum_requirements.json); by default the file's only profile. A profile's
capability blocks are merged in order (later blocks override earlier ones, as the profile's
own definition does)."""
import json
import subprocess
import sys

LIMITS = ["maxComputeSharedMemorySize", "maxComputeWorkGroupInvocations", "maxComputeWorkGroupSize",
          "maxComputeWorkGroupCount", "maxPushConstantsSize", "maxPerStageDescriptorStorageBuffers",
          "maxDescriptorSetStorageBuffers", "maxStorageBufferRange", "minStorageBufferOffsetAlignment",
          "timestampComputeAndGraphics"]


def blocks(doc, profile):
    profiles = doc["profiles"]
    name = profile or next(iter(profiles))
    out = []
    for cap in profiles[name]["capabilities"]:
        if isinstance(cap, list):  # alternatives: the first one
            cap = cap[0]
        out.append(doc["capabilities"][cap])
    return name, out


def extract(doc, profile):
    name, caps = blocks(doc, profile)
    r = {"profile": name, "api": doc["profiles"][name].get("api-version")}
    feats, exts = {}, set()
    for c in caps:
        props = c.get("properties", {})
        lim = props.get("VkPhysicalDeviceProperties", {}).get("limits", {})
        for k in LIMITS:
            if k in lim:
                r[k] = lim[k]
        for s in ("VkPhysicalDeviceSubgroupProperties", "VkPhysicalDeviceVulkan11Properties"):
            p = props.get(s, {})
            if "subgroupSize" in p:
                r["subgroupSize"] = p["subgroupSize"]
            for k in ("supportedOperations", "subgroupSupportedOperations"):
                if k in p:
                    r["subgroupOps"] = [o.replace("VK_SUBGROUP_FEATURE_", "").replace("_BIT", "") for o in p[k]]
            for k in ("supportedStages", "subgroupSupportedStages"):
                if k in p:
                    r["subgroupStages"] = p[k]
        if "VkPhysicalDevicePortabilitySubsetPropertiesKHR" in props:
            r["portability"] = props["VkPhysicalDevicePortabilitySubsetPropertiesKHR"]
        for s, f in c.get("features", {}).items():
            for k, v in f.items():
                if v is True:
                    feats[k] = True
        exts |= set(c.get("extensions", {}).keys())
    for k in ("storageBuffer16BitAccess", "shaderFloat16", "shaderFloat64", "shaderInt64"):
        r[k] = bool(feats.get(k))
    for e in ("VK_KHR_push_descriptor", "VK_KHR_shader_float16_int8", "VK_KHR_16bit_storage",
              "VK_NV_cooperative_matrix", "VK_KHR_cooperative_matrix", "VK_KHR_portability_subset"):
        r[e] = e in exts
    return r


def main():
    git_dir, commit = sys.argv[1], sys.argv[2]
    for arg in sys.argv[3:]:
        short, spec = arg.split("=", 1)
        path, _, profile = spec.partition(":")
        text = subprocess.check_output(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"])
        r = extract(json.loads(text), profile or None)
        print(json.dumps({"name": short, "path": path, **r}))


if __name__ == "__main__":
    main()
